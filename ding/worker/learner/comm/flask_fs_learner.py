"""FlaskFileSystemLearner: a learner process — an HTTP slave of the coordinator, data and policy through files.

Task flow (all started by the coordinator): ``learner_start_task`` builds the policy and a :class:`BaseLearner`
(loading the run's latest checkpoint when the coordinator names one) and starts its training thread;
``learner_get_data_task`` returns the learner's next data demand; ``learner_learn_task`` hands over sampled metadata
and answers, once the learner trained on it, with the learn info (train iteration, priorities); ``learner_close_task``
stops training and writes a checkpoint. The training thread reads the data files named by the metadata and publishes
the policy to ``path_policy/<policy_id>`` every ``send_policy_freq`` iterations.
"""
from __future__ import annotations

import collections
import logging
import os
import queue
import threading
import time
from typing import Any

import numpy as np
from easydict import EasyDict

from ding.utils import COMM_LEARNER_REGISTRY, DataFileError, deep_merge_dicts
from ding.worker.comm_role import COMM_ROLE_CONFIG, SlaveBacked, build_slave

from ..base_learner import BaseLearner
from ..checkpoint import find_latest_checkpoint
from ..learner_hook import LearnerHook
from .base_comm_learner import BaseCommLearner

_STOPPED = object()


class _Slot:
    """Where the learn info of one batch goes (the learn task that brought the batch waits on it)."""

    def __init__(self) -> None:
        self.event = threading.Event()
        self.info: dict[str, Any] | None = None


class SendPolicyHook(LearnerHook):
    """Publish the policy every ``freq`` iterations (after_iter)."""

    def __init__(self, comm: FlaskFileSystemLearner, freq: int) -> None:
        super().__init__("send_policy", 30, position="after_iter")
        self._comm, self._freq = comm, max(1, int(freq))

    def __call__(self, engine: BaseLearner) -> None:
        if engine.train_iter % self._freq == 0:
            self._comm.send_policy(engine.policy.state_dict())


class SendLearnInfoHook(LearnerHook):
    """Hand each iteration's learn info to the learn task waiting for it (after_iter, after the other hooks)."""

    def __init__(self, comm: FlaskFileSystemLearner) -> None:
        super().__init__("send_learn_info", 40, position="after_iter")
        self._comm = comm

    def __call__(self, engine: BaseLearner) -> None:
        self._comm.send_learn_info(engine.learn_info)


def _jsonable(value: Any) -> Any:
    if isinstance(value, np.ndarray):
        return value.tolist()
    if hasattr(value, "detach"):
        return value.detach().cpu().numpy().tolist()
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, (list, tuple)):
        return [_jsonable(v) for v in value]
    return value


@COMM_LEARNER_REGISTRY.register("flask_fs")
class FlaskFileSystemLearner(SlaveBacked, BaseCommLearner):
    """A learner process's slave: see the module docstring for the task flow."""

    config = dict(
        type="flask_fs",
        import_names=[],
        **COMM_ROLE_CONFIG,
        prefetch_batches=16,  # batches the coordinator keeps queued here (hides round trips; priorities lag by these)
        sample_cache_size=None,  # decoded samples kept in memory (data files never change); None: the buffer size
    )

    def __init__(self, cfg: Any, name: str = "learner0", token: str | None = None) -> None:
        super().__init__(deep_merge_dicts(self.default_config(), cfg))
        cfg = self._cfg
        self.name = name
        self._logger = logging.getLogger(f"ding.learner_slave.{name}")
        self._slave = build_slave(cfg, name, "learner", token, {
            "resource": lambda task: self.deal_with_resource(),
            "learner_start_task": self.deal_with_learner_start,
            "learner_get_data_task": self.deal_with_get_data,
            "learner_learn_task": self.deal_with_learner_learn,
            "learner_close_task": self.deal_with_learner_close,
        }, self.deal_with_resource(), self._logger)
        self._learner: BaseLearner | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._demand: dict[str, int] | None = None  # the learner's data demand: kept, so a re-admitted role answers it
        self._demand_set = threading.Event()
        self._data: queue.Queue = queue.Queue()
        self._local: collections.deque = collections.deque()  # batches received but not yet handed to the learner
        self._slots: collections.deque = collections.deque()  # slots of handed-out batches, in training order
        self._path_data = ""
        self._policy_path = ""
        self._policy_iter = -1
        self._skipped_files = 0
        self._cache: collections.OrderedDict = collections.OrderedDict()
        self._cache_size = 0
        self._start_lock = threading.Lock()

    # ---------------------------------------------------------------- process lifecycle
    def close(self) -> None:
        """Stop training (a checkpoint is written by the learner's after_run hooks), close the learner and the slave."""
        self._stop_learner(timeout=30.0)
        self._slave.close()
        super().close()

    def _stop_learner(self, timeout: float) -> None:
        self._stop.set()
        if self._learner is not None:
            self._learner.request_stop()
        self._data.put(_STOPPED)
        if self._thread is not None:
            self._thread.join(timeout=timeout)
        if self._learner is not None and (self._thread is None or not self._thread.is_alive()):
            self._learner.close()

    # ---------------------------------------------------------------- tasks
    def deal_with_resource(self) -> dict:
        return {"cpu": os.cpu_count() or 1, "gpu": 0}

    def deal_with_learner_start(self, task: dict) -> dict:
        with self._start_lock:
            if self._learner is not None:
                if self._thread is not None and self._thread.is_alive():
                    return {"learner_step": self._learner.train_iter, "policy_iter": self._policy_iter,
                            "already_started": True}
                raise RuntimeError(f"learner '{self.name}' already ran a learner task; start a new process")
            return self._start_learning(EasyDict(task))

    def _start_learning(self, task: EasyDict) -> dict:
        from ding.policy import create_policy
        from ding.utils import set_pkg_seed

        cfg = EasyDict(task.main_config)
        exp_name = cfg.exp_name
        set_pkg_seed(int(task.get("seed", cfg.get("seed", 0))), use_cuda=bool(cfg.policy.get("cuda", False)))
        self._path_data = task.path_data
        size = self._cfg.sample_cache_size
        self._cache_size = int(cfg.policy.other.replay_buffer.get("replay_buffer_size", 0) if size is None else size)
        os.makedirs(task.path_policy, exist_ok=True)
        self._policy_path = os.path.join(task.path_policy, task.policy_id)
        policy = create_policy(cfg.policy, enable_field=["learn"])
        learner_cfg = EasyDict(dict(cfg.policy.learn.learner))
        learner_cfg.dataloader = dict(learner_cfg.get("dataloader", {}), num_workers=max(
            1, int(learner_cfg.get("dataloader", {}).get("num_workers", 0))))  # prefetch: hide the round trips
        learner = BaseLearner(learner_cfg, policy.learn_mode, exp_name=exp_name, instance_name=self.name,
                              data_source=self.get_data, ckpt_dir=os.path.join(exp_name, "ckpt"),
                              log_dir=os.path.join(exp_name, "log", self.name))
        for hook in self.hooks4call_for(int(learner_cfg.get("send_policy_freq", 1))):
            learner.register_hook(hook)
        load_path = task.get("load_path")
        if load_path:
            path = find_latest_checkpoint(load_path, learner.logger) if os.path.isdir(load_path) else load_path
            if path:
                learner.load_checkpoint(path)
        self._learner = learner
        self.send_policy(learner.policy.state_dict())
        self._demand = {"batch_size": int(learner.policy.get_attribute("batch_size")),
                        "n_batches": int(self._cfg.prefetch_batches)}
        self._demand_set.set()
        self._thread = threading.Thread(target=self._train, name=f"ding-{self.name}-train", daemon=True)
        self._thread.start()
        learner.info(f"learner task {task.get('task_id')} started at train_iter {learner.train_iter}")
        return {"learner_step": learner.train_iter, "policy_iter": self._policy_iter,
                "loaded": bool(load_path) and learner.train_iter > 0}

    def _train(self) -> None:
        assert self._learner is not None
        try:
            self._learner.start()
        except BaseException as e:  # noqa: BLE001 -- kept and reported to the coordinator by the next task
            self._error = e
            self._logger.exception(f"learner '{self.name}' stopped with an error")
            while self._slots:
                self._slots.popleft().event.set()
        finally:
            self._stop.set()

    def _check_alive(self) -> None:
        if self._error is not None:
            raise RuntimeError(f"the learner stopped with {type(self._error).__name__}: {self._error}") from self._error
        if self._learner is None:
            raise RuntimeError(f"learner '{self.name}' has no learner task yet (learner_start_task first)")

    def deal_with_get_data(self, task: dict) -> dict:
        """The learner's data demand (batch size, batches to keep queued here), waiting up to ``wait_s`` for it.

        The demand is state, not a one-shot message: a coordinator that lost this learner (a frozen process, a network
        partition) and admits it again asks again and must get the same answer, or it would wait forever."""
        self._check_alive()
        if not self._demand_set.wait(float(task.get("wait_s", 0.5))):
            self._check_alive()
            return {"demand": None}
        return {"demand": dict(self._demand or {})}

    def deal_with_learner_learn(self, task: dict) -> dict:
        """Hand over batches of metadata; answer with the learn info of each once the learner trained on it."""
        self._check_alive()
        from ding.worker.parallel_files import from_columns

        batches = task.get("data")
        if not isinstance(batches, list):
            raise ValueError("learner_learn_task: 'data' must be a list of batches (metadata dicts, or columns)")
        batches = [from_columns(b) for b in batches]
        envstep = int(task.get("envstep", -1))
        slots = []
        for batch in batches:
            slot = _Slot()
            slots.append(slot)
            self._data.put((batch, slot, envstep))
        deadline = time.monotonic() + float(task.get("wait_s", 600.0))
        for slot in slots:
            while not slot.event.wait(0.1):
                if self._stop.is_set() or time.monotonic() > deadline:
                    break
        self._check_alive()
        infos = [s.info for s in slots if s.info is not None]
        return {"infos": infos, "trained": len(infos), "skipped_files": self._take_skipped()}

    def deal_with_learner_close(self, task: dict) -> dict:
        """Stop training; the learner's after_run hooks write the final checkpoint."""
        learner = self._learner
        self._stop_learner(timeout=float(task.get("wait_s", 60.0)))
        if learner is None:
            return {"learner_step": 0}
        if self._error is None:
            self.send_policy(learner.policy.state_dict())
        return {"learner_step": learner.train_iter, "ckpt_name": learner.ckpt_name}

    def _take_skipped(self) -> int:
        n, self._skipped_files = self._skipped_files, 0
        return n

    # ---------------------------------------------------------------- the learner's side
    def get_data(self, batch_size: int) -> list | None:
        """The learner's data source: one batch of samples, read from the data files the coordinator sampled.

        The coordinator keeps up to ``prefetch_batches`` batches queued here (the demand sent at start tells it the
        batch size and that number), so training never waits for a round trip while data is available.
        """
        while True:
            if not self._local and not self._receive():
                return None
            batch, slot, envstep = self._local.popleft()
            samples = self._load(batch)
            if samples:
                self._slots.append((slot, envstep))
                if envstep >= 0 and self._learner is not None:
                    self._learner.collector_envstep = envstep
                return samples
            slot.info = {"learner_step": self._learner.train_iter if self._learner else 0, "priority_info": None,
                         "skipped": True}
            slot.event.set()

    def _receive(self) -> bool:
        """Wait for the batches of one learn task (they arrive together); False when stopping."""
        while True:
            try:
                item = self._data.get(timeout=0.1)
            except queue.Empty:
                if self._stop.is_set():
                    return False
                continue
            if item is _STOPPED:
                return False
            self._local.append(item)
            while True:  # take the rest of the same task without waiting
                try:
                    more = self._data.get_nowait()
                except queue.Empty:
                    return True
                if more is _STOPPED:
                    return bool(self._local)
                self._local.append(more)

    def _load(self, batch: list) -> list:
        from ding.worker.parallel_files import read_data

        samples = []
        cache = self._cache
        for meta in batch:
            data_id = str(meta.get("data_id")) if isinstance(meta, dict) else ""
            stored = cache.get(data_id)
            if stored is not None:
                cache.move_to_end(data_id)
            else:
                try:
                    stored = read_data(self._path_data, data_id)
                except (DataFileError, TypeError) as e:
                    self._skipped_files += 1
                    self._logger.warning(f"skipped a training sample: {e}")
                    continue
                if not isinstance(stored, dict):
                    self._skipped_files += 1
                    self._logger.warning(f"skipped data file {data_id}: not a sample dict")
                    continue
                if self._cache_size > 0:
                    cache[data_id] = stored
                    if len(cache) > self._cache_size:
                        cache.popitem(last=False)
            sample = dict(stored)
            for k, v in meta.items():
                if k != "data_id":
                    sample[k] = v
            samples.append(sample)
        return samples

    def send_learn_info(self, learn_info: dict) -> None:
        if not self._slots:
            return  # an iteration not fed by a learn task (cannot happen in start(); harmless)
        slot, _ = self._slots.popleft()
        learner = self._learner
        info: dict[str, Any] = {"learner_step": int(learn_info.get("learner_step", 0)),
                                "policy_iter": self._policy_iter,
                                "learner_done": bool(learn_info.get("learner_done", False)), "priority_info": None}
        pi = learn_info.get("priority_info")
        if pi:
            info["priority_info"] = {k: _jsonable(v) for k, v in pi.items()}
        if learner is not None:
            info["stats"] = {k: float(v) for k, v in learner.log_buffer.get("scalar", {}).items()}
        slot.info = info
        slot.event.set()

    def send_policy(self, state_dict: dict) -> None:
        from ding.worker.parallel_files import write_policy

        learner = self._learner
        it = learner.train_iter if learner is not None else 0
        write_policy(self._policy_path, state_dict["model"], it)
        self._policy_iter = it

    def hooks4call_for(self, send_policy_freq: int) -> list:
        return [SendPolicyHook(self, send_policy_freq), SendLearnInfoHook(self)]

    @property
    def hooks4call(self) -> list:
        return self.hooks4call_for(1)
