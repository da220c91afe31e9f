"""MLflow as a tracker (``logger.types=[..., 'mlflow']``; ``pip install 'ding[mlflow]'``).

One MLflow run per ding run in the experiment ``logger.mlflow.experiment``: every TensorBoard scalar as a metric of
the same key, step and value; the compiled config as the run's parameters; the run directory's ``result`` as the
artifact ``result.json`` and the run's status (FINISHED, or KILLED while paused). The run id is kept in the
checkpoint, so a resume continues the same run.
"""
from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from ..registry_factory import LOGGER_REGISTRY
from .base import RunInfo, Scalar, Tracker

_BATCH = 1000  # MLflow's limit of metrics per log_batch call
_PARAM_BATCH = 100  # ... and of params
_PARAM_VALUE_LEN = 6000


@LOGGER_REGISTRY.register("mlflow")
class MlflowTracker(Tracker):
    """Logs through ``MlflowClient`` (no global active run: several runs in one process do not mix)."""

    name = "mlflow"
    package = "mlflow"

    def __init__(self, cfg: Mapping[str, Any], run: RunInfo) -> None:
        super().__init__(cfg, run)
        self._client: Any = None
        self._run_id: str | None = None
        self._uri: str | None = None

    def start(self, params: Mapping[str, Any], state: Mapping[str, Any] | None) -> None:
        # an HTTP server that is down: MLflow's defaults retry for minutes; the config's bound applies unless the
        # environment already sets one
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_TIMEOUT", str(int(self.cfg.get("request_timeout_s", 10))))
        os.environ.setdefault("MLFLOW_HTTP_REQUEST_MAX_RETRIES", str(int(self.cfg.get("request_retries", 1))))
        from mlflow.entities import Param, RunStatus
        from mlflow.tracking import MlflowClient

        self._uri = (state or {}).get("tracking_uri") or self.cfg.get("tracking_uri")
        self._client = client = MlflowClient(tracking_uri=self._uri)
        if state and state.get("run_id"):
            self._run_id = str(state["run_id"])
            client.update_run(self._run_id, status=RunStatus.to_string(RunStatus.RUNNING))
            return
        experiment_id = self._experiment_id(str(self.cfg.get("experiment") or "ding"))
        tags = {"mlflow.runName": self.run.name, "ding.exp_dir": os.path.abspath(self.run.exp_dir),
                **({"ding.run": str(self.run.group), "ding.role": self.run.role} if self.run.role else {}),
                **{str(k): str(v) for k, v in dict(self.cfg.get("tags") or {}).items()}}
        self._run_id = client.create_run(experiment_id, tags=tags, run_name=self.run.name).info.run_id
        items = [Param(k, _param_value(v)) for k, v in params.items()]
        for i in range(0, len(items), _PARAM_BATCH):
            client.log_batch(self._run_id, params=items[i:i + _PARAM_BATCH])

    def _experiment_id(self, name: str) -> str:
        from mlflow.exceptions import MlflowException

        found = self._client.get_experiment_by_name(name)
        if found is not None:
            return str(found.experiment_id)
        try:
            return str(self._client.create_experiment(name))
        except MlflowException:  # another process (a parallel tuner's trial) created it first
            found = self._client.get_experiment_by_name(name)
            if found is None:
                raise
            return str(found.experiment_id)

    def log(self, scalars: Sequence[Scalar]) -> None:
        from mlflow.entities import Metric

        metrics = [Metric(s.tag, s.value, int(s.wall_time * 1000), s.step) for s in scalars]
        for i in range(0, len(metrics), _BATCH):
            self._client.log_batch(self._run_id, metrics=metrics[i:i + _BATCH])

    def state(self) -> dict[str, Any]:
        return {"run_id": self._run_id, "tracking_uri": self._uri}

    def finish(self, result: Mapping[str, Any], ended: str) -> None:
        if self._client is None or self._run_id is None:
            return
        self._client.log_dict(self._run_id, dict(result), "result.json")
        self._client.set_tag(self._run_id, "ding.ended", ended)
        self._client.set_terminated(self._run_id, "KILLED" if ended in ("interrupted", "closed") else "FINISHED")
        self._client = None

    def close(self) -> None:
        self._client = None


def _param_value(v: Any) -> str:
    text = v if isinstance(v, str) else json.dumps(v)
    return text if len(text) <= _PARAM_VALUE_LEN else text[:_PARAM_VALUE_LEN - 3] + "..."
