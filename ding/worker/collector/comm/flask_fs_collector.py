"""FlaskFileSystemCollector: a collector process — an HTTP slave of the coordinator writing data files.

Task flow (started by the coordinator): ``collector_start_task`` builds the parallel collector (envs, policy);
each ``collector_data_task`` runs one collect task (samples into ``path_data``, metadata in the answer) or one
evaluation; ``collector_close_task`` closes the envs. ``resource`` reports what the process offers.
"""
from __future__ import annotations

import logging
import os
import queue
import threading
from collections.abc import Mapping
from typing import Any

from easydict import EasyDict

from ding.interaction import TaskCancelled
from ding.utils import COMM_COLLECTOR_REGISTRY, deep_merge_dicts
from ding.worker.comm_role import COMM_ROLE_CONFIG, SlaveBacked, build_slave

from .base_comm_collector import BaseCommCollector


@COMM_COLLECTOR_REGISTRY.register("flask_fs")
class FlaskFileSystemCollector(SlaveBacked, BaseCommCollector):
    """A collector process's slave: see the module docstring for the task flow."""

    config = dict(
        type="flask_fs",
        import_names=[],
        **COMM_ROLE_CONFIG,
    )

    def __init__(self, cfg: Mapping, name: str = "collector0", token: str | None = None) -> None:
        super().__init__(deep_merge_dicts(self.default_config(), cfg))
        cfg = self._cfg
        self.name = name
        self._logger = logging.getLogger(f"ding.collector_slave.{name}")
        self._slave = build_slave(cfg, name, "collector", token, {
            "resource": lambda task: self.deal_with_resource(),
            "collector_start_task": self.deal_with_collector_start,
            "collector_data_task": self.deal_with_collector_data,
            "collector_close_task": self.deal_with_collector_close,
        }, self.deal_with_resource(), self._logger)
        self._collector: Any = None
        self._path_data = ""
        self._metadata: queue.Queue = queue.Queue()
        self._task_lock = threading.Lock()  # one collector task at a time: the envs are not shared

    # ---------------------------------------------------------------- process lifecycle
    def close(self) -> None:
        self._slave.close()
        with self._task_lock:
            self._close_collector()
        super().close()

    def _close_collector(self) -> None:
        if self._collector is not None:
            collector, self._collector = self._collector, None
            collector.close()

    # ---------------------------------------------------------------- tasks
    def deal_with_resource(self) -> dict:
        return {"cpu": os.cpu_count() or 1, "gpu": 0}

    def deal_with_collector_start(self, task: dict) -> dict:
        from ..base_parallel_collector import create_parallel_collector

        with self._task_lock:
            info = EasyDict(task)
            self._close_collector()
            cfg = EasyDict(info.main_config)
            self._path_data = info.path_data
            os.makedirs(self._path_data, exist_ok=True)
            collector = create_parallel_collector(cfg, exp_name=cfg.exp_name, instance_name=self.name,
                                                  seed=int(info.get("seed", 0)),
                                                  policy_path=os.path.join(info.path_policy, info.policy_id))
            collector.send_stepdata = self.send_stepdata
            collector.get_policy_update_info = self.get_policy_update_info
            collector.start()
            self._collector = collector
            return {"started": True}

    def deal_with_collector_data(self, task: dict) -> dict:
        with self._task_lock:
            if self._collector is None:
                raise RuntimeError(f"collector '{self.name}' has no collector_start_task yet")
            if self._slave.stopping:
                raise RuntimeError(f"collector '{self.name}' is shutting down")
            self._check_cancelled()  # (cancelled while it waited for the task before it)
            return self._collector.run_task(task)

    def _check_cancelled(self) -> None:
        if self._slave.task_cancelled():
            raise TaskCancelled(f"collector '{self.name}': the task was cancelled (its deadline passed); "
                                "nothing more of it is written")

    def deal_with_collector_close(self, task: dict) -> dict:
        with self._task_lock:
            info = self._collector.get_finish_info() if self._collector is not None else {}
            self._close_collector()
            return info

    # ---------------------------------------------------------------- the parallel collector's side
    def send_stepdata(self, data_id: str, stepdata: Any, compress: bool = True) -> int:
        from ding.worker.parallel_files import write_data

        self._check_cancelled()  # a cancelled task writes no more files: the coordinator deleted its data
        return write_data(self._path_data, data_id, stepdata, compress=compress)

    def send_metadata(self, metadata: Any) -> None:
        self._metadata.put(metadata)

    def get_policy_update_info(self, path: str) -> dict | None:
        from ding.worker.parallel_files import read_policy

        return read_policy(path)
