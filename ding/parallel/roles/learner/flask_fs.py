"""FlaskFileSystemLearner: a learner process — an HTTP slave of the coordinator, data and policy through files.

Task flow (all started by the coordinator; the records are in :mod:`ding.parallel.protocol`): a
``LearnerStartTask`` builds the policy and a :class:`BaseLearner` (loading the run's latest checkpoint when the
coordinator names one) and starts its training thread; a ``GetDataTask`` returns the learner's next data demand; a
``LearnTask`` hands over sampled metadata and answers, once the learner trained on it, with the learn info (train
iteration, priorities); a ``LearnerCloseTask`` stops training and writes a checkpoint. A training thread that fails
is reported, with its own traceback, by the next task.

The training thread does nothing but train (the learner's speed in a parallel run is the run's speed): the data files
a learn task names are read and decoded by the task's own thread as it arrives, and the task's samples are stacked
once there, field by field, into a :class:`~ding.utils.data.ColumnBatch` when the policy takes one (the built-in
policies do; any other gets the sample dicts), so the training thread takes ready batches (:class:`ReadBatches`);
a learn task's thread is woken once, when its last batch is trained, and
turns the learn infos into records itself; the policy is published to ``path_policy/<policy_id>`` by a publisher
thread from a snapshot, every ``send_policy_freq`` iterations but at most every ``send_policy_interval`` seconds.
"""
from __future__ import annotations

import collections
import logging
import os
import queue
import threading
import time
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
from easydict import EasyDict

from ding.parallel.files import learner_load_path, policy_path, read_data_file, run_dir, task_of
from ding.parallel.launch.cpu_placement import apply_placement
from ding.parallel.protocol import (
    DATA_ID,
    DemandAnswer,
    GetDataTask,
    LearnerClosed,
    LearnerCloseTask,
    LearnerDemand,
    LearnerStarted,
    LearnerStartTask,
    LearnInfo,
    LearnResult,
    LearnTask,
)
from ding.parallel.roles.learner.base import BaseCommLearner
from ding.parallel.roles.learner.policy_publisher import PolicyPublisher
from ding.parallel.roles.learner.sample_store import SampleStore
from ding.parallel.roles.role import COMM_ROLE_CONFIG, RoleSlave, SlaveBacked
from ding.torch_utils import DecodeLimits
from ding.utils import COMM_LEARNER_REGISTRY, DataFileError, deep_merge_dicts
from ding.utils.data import ColumnBatch, learn_takes_columns
from ding.utils.torch_threads import torch_threads_in_this_thread
from ding.utils.tracking import TrackingWriter, role_writer
from ding.worker.learner.base_learner import BaseLearner
from ding.worker.learner.checkpoint import find_latest_checkpoint
from ding.worker.learner.learner_hook import LearnerHook

_STOPPED = object()
# Batches the coordinator keeps queued at a learner, sent in learn tasks of a quarter of this: 4 (tasks of one batch)
# reached the stop value no slower than 32 in the A/B of docs/benchmarks.md (speed mechanisms on and off).
PREFETCH_BATCHES = 4


class _TaskSlot:
    """Where the learn infos of one learn task's batches go. The training thread adds one per batch; the task's thread
    waits on ``event``, which is set once, when the last batch is in (one wake-up per task, not one per iteration)."""

    def __init__(self, n: int) -> None:
        self.event = threading.Event()
        self.left = n
        if n <= 0:
            self.event.set()
        self.infos: list[Any] = []  # (learn_info, policy_iter, stats) per trained batch, converted by the task

    def add(self, info: Any) -> None:
        self.infos.append(info)
        self.left -= 1
        if self.left <= 0:
            self.event.set()


@dataclass
class ReadBatches:
    """A learn task's batches as its thread read them: all their samples as one
    :class:`~ding.utils.data.ColumnBatch` when the policy takes columns, else each batch's sample dicts; ``sizes``
    says how many samples each batch has (0: every file of the batch was missing or damaged)."""

    sizes: list[int]
    envstep: int
    wait_s: float
    skipped_files: int = 0
    columns: ColumnBatch | None = None
    samples: list[list[dict]] | None = None

    def batches(self) -> list[ColumnBatch | list[dict] | None]:
        """Per batch: a ColumnBatch (a view of ``columns``), its sample dicts, or None (nothing to train)."""
        if self.columns is not None:
            parts = iter(self.columns.split([n for n in self.sizes if n]))
            return [next(parts) if n else None for n in self.sizes]
        samples = self.samples or [[] for _ in self.sizes]
        return [batch if batch else None for batch in samples]


class SendPolicyHook(LearnerHook):
    """Publish the policy every ``send_policy_freq`` iterations of the comm learner, at most every
    ``send_policy_interval`` seconds (after_iter)."""

    def __init__(self, comm: FlaskFileSystemLearner) -> None:
        super().__init__("send_policy", 30, position="after_iter")
        self._comm = comm

    def __call__(self, engine: BaseLearner) -> None:
        comm = self._comm
        if (engine.train_iter - comm.published_iter >= comm.send_policy_freq
                and time.monotonic() - comm.published_at >= comm.send_policy_interval):
            comm.publish_soon(engine.policy.state_dict(), engine.train_iter)


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
        sample_cache_size=None,  # decoded samples kept in memory (data files never change); None: the buffer size
        # decoded bytes those samples may hold (MiB; the oldest give way, a larger sample is skipped); None:
        # replay_buffer_size x 64 KiB, at least 256 MiB and at most 4096 MiB
        sample_cache_mb=None,
        max_data_file_mb=64,  # a data file larger than this is skipped as damaged (see docs/parallel.md, Security)
        max_sample_mb=64,  # ... and so is one that expands to more than this (decompressed bytes, array bytes)
    )
    _column_batches = True  # batches reach a policy that takes them as columns (False: always as sample lists)

    def __init__(self, cfg: Any, name: str = "learner0", token: str | None = None) -> None:
        super().__init__(deep_merge_dicts(self.default_config(), cfg))
        cfg = self._cfg
        self.name = name
        self._logger = logging.getLogger(f"ding.learner_slave.{name}")
        apply_placement(name, trains=True)  # this process trains: the training CPUs of ding -m parallel's placement
        self._slave: Any = RoleSlave(cfg, name, "learner", token, self._task_handlers(), self.deal_with_resource(),
                                     self._logger)
        self.send_policy_freq = 1  # set from the learner config by the start task
        self.send_policy_interval = 0.0
        self._publisher: PolicyPublisher | None = None
        self._learner: BaseLearner | None = None
        self._tracking: TrackingWriter | None = None
        self._thread: threading.Thread | None = None
        self._error: BaseException | None = None
        self._stop = threading.Event()
        self._demand: LearnerDemand | None = None  # the learner's data demand: kept, so a re-admitted role answers it
        self._demand_set = threading.Event()
        self._data: queue.Queue = queue.Queue()  # (samples, task slot, envstep): batches read, not yet trained
        self._slots: collections.deque = collections.deque()  # slots of handed-out batches, in training order
        self._path_data = ""
        self._skipped_files = 0
        self._load_lock = threading.Lock()  # learn tasks' threads read files and share the store
        self._store = SampleStore(0)  # decoded samples, as columns (sized by the start task)
        self._bad: collections.OrderedDict = collections.OrderedDict()  # ids of damaged/crafted files (oldest first)
        self._columns = False  # hand batches over as ColumnBatch (the learner's policy takes them)
        self._start_lock = threading.Lock()
        self._train_s = 0.0  # the training thread's run time, and of it the time it waited for a batch
        self._data_wait_s = 0.0
        self._start_iter = 0
        self._limits = DecodeLimits(max_file_bytes=int(float(cfg.max_data_file_mb) * (1 << 20)),
                                    max_decoded_bytes=int(float(cfg.max_sample_mb) * (1 << 20)))

    # ---------------------------------------------------------------- process lifecycle
    def close(self) -> None:
        """Stop training (a checkpoint is written by the learner's after_run hooks), close the learner and the slave."""
        self._stop_learner(timeout=30.0)
        self._slave.close()
        super().close()

    def _task_handlers(self) -> dict[type, Any]:
        return {LearnerStartTask: self.deal_with_learner_start, GetDataTask: self.deal_with_get_data,
                LearnTask: self.deal_with_learner_learn, LearnerCloseTask: self.deal_with_learner_close}

    def _prepare_reading(self, task: LearnerStartTask) -> None:
        """Where the data files are and how many decoded samples to keep, from the start task."""
        self._path_data = run_dir(task.path_data, self._cfg.get("path_data"), "LearnerStartTask.path_data")
        size = self._cfg.sample_cache_size
        replay = EasyDict(task.main_config).policy.other.replay_buffer
        buffer_size = int(replay.get("replay_buffer_size", 0) or 0)
        cap_mb = self._cfg.get("sample_cache_mb")
        cap_mb = min(4096.0, max(256.0, buffer_size / 16)) if cap_mb is None else float(cap_mb)
        self._store = SampleStore(buffer_size if size is None else int(size), max_bytes=int(cap_mb * 2**20))

    def _stop_learner(self, timeout: float) -> None:
        self._stop.set()
        if self._learner is not None:
            self._learner.request_stop()
        self._data.put(_STOPPED)
        if self._thread is not None:
            self._thread.join(timeout=timeout)
        if self._learner is not None and (self._thread is None or not self._thread.is_alive()):
            self._learner.close()
        if self._tracking is not None:
            self._tracking.finish({"learner_train_iter": self._learner.train_iter if self._learner else 0}, "finished")
            self._tracking.close()
            self._tracking = None
        if self._publisher is not None:
            self._publisher.close()

    # ---------------------------------------------------------------- tasks
    def deal_with_resource(self) -> dict:
        return {"cpu": os.cpu_count() or 1, "gpu": 0}

    def deal_with_learner_start(self, task: LearnerStartTask) -> LearnerStarted:
        with self._start_lock:
            if self._learner is not None:
                if self._thread is not None and self._thread.is_alive():
                    return LearnerStarted(learner_step=self._learner.train_iter, policy_iter=self.policy_iter,
                                          already_started=True)
                raise RuntimeError(f"learner '{self.name}' already ran a learner task; start a new process")
            return self._start_learning(task)

    def _start_learning(self, task: LearnerStartTask) -> LearnerStarted:
        from ding.worker.builder import (
            build_learning,  # the one builder (serial runs use it too); lazy: it imports workers
        )

        cfg = EasyDict(task.main_config)
        exp_name = cfg.exp_name
        self._prepare_reading(task)
        path_policy = run_dir(task.path_policy, self._cfg.get("path_policy"), "LearnerStartTask.path_policy")
        self._publisher = PolicyPublisher(policy_path(path_policy, task.policy_id))
        ckpt_dir = os.path.join(exp_name, "ckpt")
        load_path = learner_load_path(task.load_path, ckpt_dir)
        os.makedirs(path_policy, exist_ok=True)
        # (no data loader thread by default: the learn tasks' threads read the files, batches arrive ready)
        learner_cfg = EasyDict(dict(cfg.policy.learn.learner))
        log_dir = os.path.join(exp_name, "log", self.name)
        self._tracking = role_writer(cfg, self.name, log_dir)  # the losses: TensorBoard and the trackers
        learner = build_learning(cfg, seed=task.seed, learner_cfg=learner_cfg, exp_name=exp_name,
                                 instance_name=self.name, data_source=self.get_data, ckpt_dir=ckpt_dir,
                                 log_dir=log_dir, tb_logger=self._tracking).learner
        self._tracking.start(cfg)
        self.send_policy_freq = max(1, int(learner_cfg.get("send_policy_freq", 1)))
        self.send_policy_interval = max(0.0, float(learner_cfg.get("send_policy_interval", 0.0)))
        for hook in self.hooks4call:
            learner.register_hook(hook)
        if load_path:  # the learner's own directory, tensors only (nothing there is unpickled)
            path = find_latest_checkpoint(load_path, learner.logger) if os.path.isdir(load_path) else load_path
            if path:
                learner.load_checkpoint(path, allow_pickle=False)
        self._learner = learner
        policy = getattr(learner.policy.forward, "__self__", None)  # the Policy behind the learn-mode view
        self._columns = type(self)._column_batches and policy is not None and learn_takes_columns(policy)
        self.send_policy(learner.policy.state_dict())
        self._demand = LearnerDemand(batch_size=int(learner.policy.get_attribute("batch_size")),
                                     n_batches=PREFETCH_BATCHES)
        self._demand_set.set()
        self._thread = threading.Thread(target=self._train, name=f"ding-{self.name}-train", daemon=True)
        self._thread.start()
        learner.info(f"learner task {task.task_id} started at train_iter {learner.train_iter}")
        return LearnerStarted(learner_step=learner.train_iter, policy_iter=self.policy_iter,
                              loaded=bool(load_path) and learner.train_iter > 0)

    def _train(self) -> None:
        assert self._learner is not None
        torch_threads_in_this_thread()
        self._start_iter = self._learner.train_iter
        t0 = time.perf_counter()
        try:
            self._learner.start()
        except BaseException as e:  # noqa: BLE001 -- kept and reported to the coordinator by the next task
            self._error = e
            self._logger.exception(f"learner '{self.name}' stopped with an error")
        finally:
            self._train_s = time.perf_counter() - t0
            self._stop.set()
            self._release_slots()

    def _release_slots(self) -> None:
        """Wake every learn task waiting for a batch that will not be trained (training stopped)."""
        while self._slots:
            slot, _ = self._slots.popleft()
            slot.event.set()

    def _check_alive(self) -> None:
        if self._error is not None:
            raise RuntimeError(f"the learner stopped with {type(self._error).__name__}: {self._error}") from self._error
        if self._learner is None:
            raise RuntimeError(f"learner '{self.name}' has no learner task yet (a LearnerStartTask first)")

    def deal_with_get_data(self, task: GetDataTask) -> DemandAnswer:
        """The learner's data demand (batch size, batches to keep queued here), waiting up to ``wait_s`` for it.

        The demand is state, not a one-shot message: a coordinator that lost this learner (a frozen process, a network
        partition) and admits it again asks again and must get the same answer, or it would wait forever."""
        self._check_alive()
        if not self._demand_set.wait(task.wait_s):
            self._check_alive()
            return DemandAnswer(demand=None)
        return DemandAnswer(demand=self._demand)

    def deal_with_learner_learn(self, task: LearnTask) -> LearnResult:
        """Read the batches' data files (here, in the task's thread: the training thread only trains), queue them for
        the learner, answer with the learn info of each once the learner trained on all of them."""
        self._check_alive()
        return self.deal_with_read_batches(self._read_batches(task))

    def _read_batches(self, task: LearnTask) -> ReadBatches:
        """The task's batches read from their data files (through the sample store), as the learner takes them."""
        if not self._path_data:
            raise RuntimeError(f"learner '{self.name}' has no learner task yet (a LearnerStartTask first)")
        torch_threads_in_this_thread()  # (this thread decodes the data files and stacks the batches)
        with self._load_lock:
            fresh: dict[str, Any] = {}  # samples read now (the store may not keep them all)
            read = [self._load(meta, fresh) for meta in task.data]
            gone = set()
            # (only reading files puts samples in the store, so only then can it have let go of one this task needs)
            lost = self._store.missing(list(chain.from_iterable(r[0] for r in read if r)), fresh) if fresh else []
            for data_id in lost:
                if data_id not in fresh and data_id not in gone:  # let go by the store while this task read files
                    try:  # (a store smaller than what one task reads)
                        found = read_data_file(self._path_data, data_id, self._limits)
                        self._store.check(found, f"data file '{data_id}'{_written_by(data_id)}")
                        fresh.update(found)
                    except DataFileError as e:
                        gone.add(data_id)
                        self._logger.warning(f"skipped a training sample: {e}")
            if gone:
                self._skipped_files += len(gone)
                read = [_without(r, gone) for r in read]
            skipped, self._skipped_files = self._skipped_files, 0
            out = ReadBatches(sizes=[len(r[0]) if r else 0 for r in read], envstep=task.envstep, wait_s=task.wait_s,
                              skipped_files=skipped)
            if not self._columns:
                out.samples = [_laid_over([self._sample(i, fresh) for i in r[0]], r[1]) if r else [] for r in read]
            elif any(read):  # one ColumnBatch for the whole task: a gather per field, not a stack per field and batch
                keys = list(dict.fromkeys(k for r in read if r for k in r[1]))
                missing = ColumnBatch.MISSING
                extra = {k: list(chain.from_iterable(r[1].get(k, [missing] * len(r[0])) for r in read if r))
                         for k in keys}
                out.columns = self._store.batch(list(chain.from_iterable(r[0] for r in read if r)), extra, fresh)
        return out

    def _sample(self, data_id: str, fresh: dict[str, Any]) -> Any:
        sample = self._store.get(data_id)
        return fresh[data_id] if sample is None else sample

    def deal_with_read_batches(self, read: ReadBatches) -> LearnResult:
        """Queue the read batches for the training thread; answer once it trained on all of them."""
        self._check_alive()
        batches = read.batches()
        slot = _TaskSlot(sum(batch is not None for batch in batches))
        for batch in batches:
            if batch is not None:
                self._data.put((batch, slot, read.envstep))
        deadline = time.monotonic() + read.wait_s
        while not slot.event.wait(0.1):
            if self._stop.is_set() or time.monotonic() > deadline:
                break
        self._check_alive()
        learner = self._learner
        trained = iter([LearnInfo.from_learner(i[0], i[1], i[2], _jsonable) for i in list(slot.infos)])
        infos: list[LearnInfo] = []
        for batch in batches:  # in the task's batch order
            info = LearnInfo(learner_step=learner.train_iter if learner else 0, skipped=True) if batch is None \
                else next(trained, None)
            if info is None:
                break  # training stopped before this batch
            infos.append(info)
        return LearnResult(infos=infos, trained=len(infos), skipped_files=read.skipped_files)

    def deal_with_learner_close(self, task: LearnerCloseTask) -> LearnerClosed:
        """Stop training; the learner's after_run hooks write the final checkpoint."""
        learner = self._learner
        self._stop_learner(timeout=task.wait_s)
        if learner is None:
            return LearnerClosed(learner_step=0)
        if self._error is None:
            self.send_policy(learner.policy.state_dict())  # the final policy, written at once
        return LearnerClosed(learner_step=learner.train_iter, ckpt_name=learner.ckpt_name, train_s=self._train_s,
                             data_wait_s=min(self._data_wait_s, self._train_s),
                             trained=max(0, learner.train_iter - self._start_iter))

    # ---------------------------------------------------------------- the learner's side
    def get_data(self, batch_size: int) -> list | None:
        """The learner's data source: the next batch of samples, already read from the data files the coordinator
        sampled (by the learn task that brought it). None when stopping.

        The coordinator keeps up to :data:`PREFETCH_BATCHES` batches queued here (the demand sent at start tells it the
        batch size and that number), so training never waits for a round trip while data is available.
        """
        t0 = time.perf_counter()
        while True:
            try:
                item = self._data.get(timeout=0.1)
            except queue.Empty:
                if self._stop.is_set():
                    return None
                self.on_idle()
                continue
            if item is _STOPPED:
                return None
            self._data_wait_s += time.perf_counter() - t0
            samples, slot, envstep = item
            self._slots.append((slot, envstep))
            if envstep >= 0 and self._learner is not None:
                self._learner.collector_envstep = envstep
            return samples

    def on_idle(self) -> None:
        """Called by :meth:`get_data` about every 0.1 s while no batch is there (a subclass's keep-alive)."""

    def _load(self, meta: dict[str, list], fresh: dict[str, Any]) -> tuple[list[str], dict[str, list]] | None:
        """The data ids of a learn task's batch (metadata columns) whose samples are at hand (kept, or read now into
        ``fresh``), and the batch's metadata of those samples (columns); None when every file of the batch was
        missing or damaged. Called with the load lock held."""
        ids, kept = self._read_samples(meta[DATA_ID], fresh)
        if not ids:
            return None
        whole = len(kept) == len(meta[DATA_ID])
        return ids, {k: col if whole else [col[i] for i in kept] for k, col in meta.items() if k != DATA_ID}

    def _read_samples(self, data_ids: list, fresh: dict[str, Any]) -> tuple[list[str], list[int]]:
        """Make sure the samples of ``data_ids`` are at hand: kept in the store, or read from their files now (the
        whole file goes into the store, and into ``fresh``). Returns the ids at hand and their positions in
        ``data_ids``: a sample whose file is missing or damaged is skipped (and counted)."""
        store = self._store
        if not store.missing(data_ids, fresh):  # (the common case: every sample is kept)
            return list(data_ids), list(range(len(data_ids)))
        ids, kept = [], []
        for pos, raw_id in enumerate(data_ids):
            data_id = str(raw_id)
            if data_id not in store and data_id not in fresh:
                if data_id in self._bad:  # data files never change: a bad one is not read (nor logged) again
                    self._skipped_files += 1
                    continue
                try:  # the whole file: a collect task's other samples are in the buffer too
                    found = read_data_file(self._path_data, data_id, self._limits)
                    store.check(found, f"data file '{data_id}'{_written_by(data_id)}")
                except DataFileError as e:
                    self._skipped_files += 1
                    if not isinstance(e.__cause__, FileNotFoundError):
                        self._bad[data_id] = True
                        if len(self._bad) > max(store.capacity, 10_000):
                            self._bad.popitem(last=False)
                    self._logger.warning(f"skipped a training sample: {e}")
                    continue
                fresh.update(found)
                store.put(found)
            ids.append(data_id)
            kept.append(pos)
        return ids, kept

    def send_learn_info(self, learn_info: dict) -> None:
        """Give the iteration's learn info to its learn task (the task's thread makes the record from it)."""
        if not self._slots:
            return  # an iteration not fed by a learn task (cannot happen in start(); harmless)
        slot, _ = self._slots.popleft()
        learner = self._learner
        stats = dict(learner.log_buffer.get("scalar", {})) if learner is not None else {}  # the buffer is reused
        slot.add((learn_info, self.policy_iter, stats))

    def send_policy(self, state_dict: dict) -> None:
        """Publish the learner's policy now (at start and at the end; during training :meth:`publish_soon`)."""
        if self._publisher is None:
            raise RuntimeError(f"learner '{self.name}' has no policy path yet (a LearnerStartTask first)")
        learner = self._learner
        self._publisher.publish_now(state_dict["model"], learner.train_iter if learner is not None else 0)

    def publish_soon(self, state_dict: dict, policy_iter: int) -> None:
        """Hand a snapshot of the policy to the publisher thread (the training thread does not wait for the file)."""
        assert self._publisher is not None
        self._publisher.publish_soon(state_dict["model"], policy_iter)

    @property
    def policy_iter(self) -> int:
        """The iteration of the published policy file (-1: none yet)."""
        return self._publisher.written_iter if self._publisher is not None else -1

    @property
    def published_iter(self) -> int:
        return self._publisher.handed_iter if self._publisher is not None else -1

    @property
    def published_at(self) -> float:
        return self._publisher.handed_at if self._publisher is not None else float("-inf")

    @property
    def hooks4call(self) -> list:
        """The hooks the learner this comm learner builds gets (registered at the start task): publish the policy
        every ``send_policy_freq`` iterations (at most every ``send_policy_interval`` seconds), hand each iteration's
        learn info to the learn task waiting for it."""
        return [SendPolicyHook(self), SendLearnInfoHook(self)]


def _without(read: tuple[list[str], dict[str, list]] | None, gone: set) -> tuple[list[str], dict[str, list]] | None:
    """A batch as :meth:`FlaskFileSystemLearner._load` gives it, without the samples of ``gone`` (None: none left)."""
    if read is None or not gone.intersection(read[0]):
        return read
    keep = [j for j, i in enumerate(read[0]) if i not in gone]
    if not keep:
        return None
    return [read[0][j] for j in keep], {k: [col[j] for j in keep] for k, col in read[1].items()}


def _laid_over(stored: list[dict], extra: dict[str, list]) -> list[dict]:
    """Sample dicts: each stored sample with its metadata laid over it (the stored sample is not changed)."""
    samples = []
    for j, sample in enumerate(stored):
        sample = dict(sample)
        for k, col in extra.items():
            sample[k] = col[j]
        samples.append(sample)
    return samples


def _written_by(data_id: str) -> str:
    """' (written by collector task 'T')' for a collector's data file, else ''."""
    task = task_of(data_id)
    return f" (written by collector task '{task}')" if task else ""
