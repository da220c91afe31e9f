"""Weights & Biases as a tracker (``logger.types=[..., 'wandb']``; ``pip install 'ding[wandb]'``).

Each TensorBoard tag keeps its own x-axis: a tag of a ``*_iter`` family (``learner_iter/total_loss``) is drawn over
the step metric ``train_iter``, one of a ``*_step`` family (``evaluator_step/episode_return_mean``) over
``env_step``, any other over ``step``; the value logged there is TensorBoard's step. Without credentials W&B runs
offline (``<exp>/log/wandb/offline-run-*``, ``wandb sync`` uploads them later).
"""
from __future__ import annotations

import netrc
import os
import uuid
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlparse

from ..registry_factory import LOGGER_REGISTRY
from .base import RunInfo, Scalar, Tracker


def step_metric(tag: str) -> str:
    """The W&B step metric a TensorBoard tag is drawn over: ``train_iter``, ``env_step`` or ``step``."""
    family = tag.split("/", 1)[0]
    if family.endswith("_iter"):
        return "train_iter"
    if family.endswith("_step"):
        return "env_step"
    return "step"


def has_wandb_credentials() -> bool:
    """Whether W&B would find an API key without asking: ``WANDB_API_KEY`` or a ``~/.netrc`` entry for its host."""
    if os.environ.get("WANDB_API_KEY") or os.environ.get("WANDB_IDENTITY_TOKEN_FILE"):
        return True
    host = urlparse(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai")).hostname or "api.wandb.ai"
    try:
        return netrc.netrc().authenticators(host) is not None
    except (OSError, netrc.NetrcParseError):
        return False


@LOGGER_REGISTRY.register("wandb")
class WandbTracker(Tracker):
    """One W&B run per ding run; its id is kept in the checkpoint, so a resume continues the same run."""

    name = "wandb"
    package = "wandb"

    def __init__(self, cfg: Mapping[str, Any], run: RunInfo) -> None:
        super().__init__(cfg, run)
        self._run: Any = None
        self._run_id: str | None = None
        self._families: set[str] = set()

    def mode(self) -> str:
        given = self.cfg.get("mode") or os.environ.get("WANDB_MODE")
        if given:
            return str(given)
        return "online" if has_wandb_credentials() else "offline"

    def start(self, params: Mapping[str, Any], state: Mapping[str, Any] | None) -> None:
        import wandb

        self._run_id = str(state["run_id"]) if state and state.get("run_id") else uuid.uuid4().hex[:12]
        # absolute: W&B's service process, started by the first run of this process, keeps the cwd it started in
        directory = os.path.abspath(self.cfg.get("dir") or os.path.join(self.run.exp_dir, "log"))
        os.makedirs(directory, exist_ok=True)
        init: Any = wandb.init
        self._run = init(
            project=self.cfg.get("project") or "ding", entity=self.cfg.get("entity"),
            group=self.cfg.get("group") or self.run.group, job_type=self.run.role,
            tags=list(self.cfg.get("tags") or []) or None, name=self.run.name, id=self._run_id,
            resume="allow" if state else None, dir=directory, mode=self.mode(), config=dict(params),
            reinit="create_new", settings=wandb.Settings(console="off", x_disable_stats=True, silent=True))
        for metric in ("train_iter", "env_step", "step"):
            self._run.define_metric(metric)

    def log(self, scalars: Sequence[Scalar]) -> None:
        """Consecutive records on different step metrics (or a different step) share one W&B row."""
        row: dict[str, Any] = {}
        for s in scalars:
            family, axis = s.tag.split("/", 1)[0], step_metric(s.tag)
            if family not in self._families:
                self._families.add(family)
                self._run.define_metric(f"{family}/*" if "/" in s.tag else s.tag, step_metric=axis)
            if s.tag in row or row.get(axis, s.step) != s.step:
                self._run.log(row)
                row = {}
            row[s.tag] = s.value
            row[axis] = s.step
        if row:
            self._run.log(row)

    def state(self) -> dict[str, Any]:
        return {"run_id": self._run_id}

    def finish(self, result: Mapping[str, Any], ended: str) -> None:
        if self._run is None:
            return
        self._run.summary.update({f"result/{k}": v for k, v in result.items()})
        if ended in ("interrupted", "closed"):
            self._run.mark_preempting()  # paused: a resume continues this run
        self._run.finish(exit_code=0)
        self._run = None

    def close(self) -> None:
        if self._run is not None:
            run, self._run = self._run, None
            run.finish(exit_code=1)
