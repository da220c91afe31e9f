"""FlaskFileSystemCollector: a collector process, the coordinator's HTTP slave. A ``CollectorStartTask`` builds its
parallel collector, which runs the ``CollectTask``s (data files into ``path_data``) and ``EvalTask``s until closed."""
from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from easydict import EasyDict

from ding.parallel.files import policy_path, read_policy, run_dir, write_data, write_samples
from ding.parallel.protocol import (
    CollectorCloseTask,
    CollectorFinishInfo,
    CollectorStarted,
    CollectorStartTask,
    CollectResult,
    CollectTask,
    EvalResult,
    EvalTask,
    Record,
)
from ding.parallel.roles.collector.base_comm import BaseCommCollector
from ding.parallel.roles.collector.base_parallel import create_parallel_collector
from ding.parallel.roles.role import COMM_ROLE_CONFIG, Handler, RoleSlave, SlaveBacked
from ding.parallel.transport import TaskCancelled
from ding.utils import COMM_COLLECTOR_REGISTRY, deep_merge_dicts


class NaiveCollector(RoleSlave):
    """The collector's slave; its ``ping`` answer also carries ``timestep()``, the env steps taken so far."""

    def __init__(self, cfg: Mapping[str, Any], name: str, token: str | None, handlers: Mapping[type[Record], Handler],
                 resource: Mapping[str, Any], logger: logging.Logger, timestep: Callable[[], int]) -> None:
        self._timestep = timestep
        super().__init__(cfg, name, "collector", token, handlers, resource, logger)

    def _on_ping(self, payload: dict) -> dict:
        return dict(super()._on_ping(payload), timestep=int(self._timestep()))


@COMM_COLLECTOR_REGISTRY.register("flask_fs")
class FlaskFileSystemCollector(SlaveBacked, BaseCommCollector):
    """A collector process's comm collector."""

    config = dict(
        type="flask_fs",
        import_names=[],
        **COMM_ROLE_CONFIG,
        max_policy_file_mb=1024,  # refuse a policy file (and what it holds) larger than this; see docs/parallel.md
    )

    def __init__(self, cfg: Mapping, name: str = "collector0", token: str | None = None) -> None:
        super().__init__(deep_merge_dicts(self.default_config(), cfg))
        self.name = name
        self._logger = logging.getLogger(f"ding.collector_slave.{name}")
        self._collector: Any = None
        self._path_data = ""
        self._task_lock = threading.Lock()  # one collector task at a time: the envs are not shared
        self._slave = NaiveCollector(self._cfg, name, token, {
            CollectorStartTask: self.deal_with_collector_start,
            CollectTask: self.deal_with_collector_data,
            EvalTask: self.deal_with_collector_data,
            CollectorCloseTask: self.deal_with_collector_close,
        }, self.deal_with_resource(), self._logger, timestep=self._timestep)

    def close(self) -> None:
        self._slave.close()
        with self._task_lock:
            self._close_collector()
        super().close()

    def _close_collector(self) -> None:
        collector, self._collector = self._collector, None
        if collector is not None:
            collector.close()

    def _timestep(self) -> int:
        collector = self._collector
        return collector.get_finish_info().envstep if collector is not None else 0

    def deal_with_resource(self) -> dict:
        return {"cpu": os.cpu_count() or 1, "gpu": 0}

    def deal_with_collector_start(self, task: CollectorStartTask) -> CollectorStarted:
        with self._task_lock:
            self._close_collector()
            cfg = EasyDict(task.main_config)
            self._path_data = run_dir(task.path_data, self._cfg.get("path_data"), "CollectorStartTask.path_data")
            path_policy = run_dir(task.path_policy, self._cfg.get("path_policy"), "CollectorStartTask.path_policy")
            os.makedirs(self._path_data, exist_ok=True)
            collector = create_parallel_collector(cfg, exp_name=cfg.exp_name, instance_name=self.name,
                                                  seed=task.seed, policy_path=policy_path(path_policy, task.policy_id),
                                                  send_stepdata=self.send_stepdata, send_samples=self.send_samples,
                                                  get_policy_update_info=self.get_policy_update_info)
            collector.start()
            self._collector = collector
            return CollectorStarted(started=True)

    def deal_with_collector_data(self, task: CollectTask | EvalTask) -> CollectResult | EvalResult:
        with self._task_lock:
            if self._collector is None:
                raise RuntimeError(f"collector '{self.name}' has no collector start task yet")
            if self._slave.stopping:
                raise RuntimeError(f"collector '{self.name}' is shutting down")
            self._check_cancelled()  # (cancelled while it waited for the task before it)
            return self._collector.run_task(task)

    def _check_cancelled(self) -> None:
        """A cancelled task writes no more files: the coordinator deleted its data."""
        if self._slave.task_cancelled():
            raise TaskCancelled(f"collector '{self.name}': the task was cancelled (its deadline passed); "
                                "nothing more of it is written")

    def deal_with_collector_close(self, task: CollectorCloseTask) -> CollectorFinishInfo:
        with self._task_lock:
            info = self._collector.get_finish_info() if self._collector is not None else CollectorFinishInfo()
            self._close_collector()
            return info

    def send_stepdata(self, data_id: str, stepdata: Any, compress: bool = True) -> int:
        self._check_cancelled()
        return write_data(self._path_data, data_id, stepdata, compress=compress)

    def send_samples(self, file_id: str, samples: list, compress: bool = True) -> list[str]:
        """Write a task's samples together (one data file, split only past its size cap); their data ids."""
        self._check_cancelled()
        return write_samples(self._path_data, file_id, samples, compress=compress)

    def get_policy_update_info(self, path: str) -> dict | None:
        return read_policy(path, max_bytes=int(float(self._cfg.max_policy_file_mb) * (1 << 20)))
