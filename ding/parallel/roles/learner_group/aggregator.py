"""Several learners for one run (``learner_num > 1``; docs/distributed.md, Several learners): every rank makes the
same collectives in the same order, so their models stay identical (rank 0's tensors at start, gradients averaged
before each optimizer step, buffers after it, final digests compared). A lost learner ends the run."""
from __future__ import annotations

import hashlib
import json
import time
from typing import Any

import numpy as np
import torch
from easydict import EasyDict

from ding.parallel.files import run_dir
from ding.parallel.protocol import LearnerStarted, LearnerStartTask
from ding.parallel.roles.learner.flask_fs import FlaskFileSystemLearner
from ding.parallel.roles.learner.trainer import build_task_learner, policy_of
from ding.parallel.roles.learner_group.group import (
    KIND_DATA,
    KIND_KEEPALIVE,
    KIND_STOP,
    LearnerGroup,
    LearnerGroupError,
    pick_backend,
    rendezvous_path,
)
from ding.parallel.transport.base import resolve_token
from ding.torch_utils import decode, encode
from ding.utils import ConfigError, DataFileError, set_pkg_seed
from ding.worker.learner.base_learner import BaseLearner
from ding.worker.learner.learner_hook import LearnerHook, LogReduceHook

__all__ = ["GROUP_CONFIG", "LearnerAggregator", "LearnerGroupMember", "attach_policy", "check_digests", "member_seed",
           "params_digest", "run_group_member", "split_batch"]

GROUP_CONFIG = dict(
    learner_num=1,  # the group's size (policy.learn.learner.learner_num; set per learner by the config compiler)
    learner_rank=0,  # this learner's rank in the group (learnerN: N)
    group_timeout=300.0,  # seconds to form the group, and for any one collective (a keep-alive flows every 2 s)
)
_KEEPALIVE_S = 2.0


def split_batch(samples: list, size: int) -> list[list]:
    """The shares of a batch, in rank order: contiguous, sizes differing by at most one. A batch shorter than the
    group (data files skipped) is repeated cyclically first, so no rank trains on nothing."""
    if not samples:
        raise ValueError("split_batch: an empty batch")
    if len(samples) < size:
        samples = [samples[i % len(samples)] for i in range(size)]
    bounds = np.cumsum([0] + [len(a) for a in np.array_split(np.arange(len(samples)), size)])
    return [samples[bounds[i]:bounds[i + 1]] for i in range(size)]


def _policy_parts(view: Any) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.optim.Optimizer]]:
    """The tensors (parameters and buffers, each once) of every model of the policy, wrapped ones too, the buffers
    among them (BatchNorm's statistics), and its optimizers; in the order of its attribute names, as in every rank."""
    policy = policy_of(view)
    values: list = []
    for key in sorted(vars(policy)):
        value = getattr(policy, key)
        values.extend(value if isinstance(value, (list, tuple)) else [value])
    modules = [m for m in (v if isinstance(v, torch.nn.Module) else getattr(v, "_model", None) for v in values)
               if isinstance(m, torch.nn.Module)]
    tensors: dict[int, torch.Tensor] = {}
    for module in modules:
        for t in module.state_dict(keep_vars=True).values():
            if isinstance(t, torch.Tensor):
                tensors.setdefault(id(t), t)
    buffers = {id(b) for m in modules for b in m.buffers()}
    return (list(tensors.values()), [t for t in tensors.values() if id(t) in buffers],
            [v for v in values if isinstance(v, torch.optim.Optimizer)])


def params_digest(view: Any) -> str:
    """sha256 of the policy's model tensors: equal digests, bit-identical models."""
    h = hashlib.sha256()
    for t in _policy_parts(view)[0]:
        h.update(t.detach().cpu().contiguous().numpy().tobytes())
    return h.hexdigest()


class _GradientMean:
    """The gradients of one optimizer's parameters averaged over the group once per step: before the step, or
    earlier when the policy asks (``Policy._sync_gradients``, before it clips them by hand)."""

    def __init__(self, group: LearnerGroup, params: list) -> None:
        self._group, self.params, self._done = group, params, False
        self.ids = {id(p) for p in params}

    def average(self) -> None:
        if not self._done:
            self._group.average_gradients(self.params)
            self._done = True

    def before_step(self, *_: Any) -> None:
        self.average()
        self._done = False  # the next step's gradients are new


def attach_policy(view: Any, group: LearnerGroup) -> int:
    """Give every model of the policy rank 0's tensors and make each of its optimizers average the gradients over
    the group before it steps (or before the policy clips them); the number of optimizers hooked."""
    policy = policy_of(view)
    tensors, _, optimizers = _policy_parts(view)
    if not optimizers:
        raise LearnerGroupError(f"{type(policy).__name__} has no torch optimizer among its attributes: several "
                                "learners (learner_num > 1) cannot average its gradients")
    group.broadcast_tensors(tensors)
    means = [_GradientMean(group, [p for g in opt.param_groups for p in g["params"]]) for opt in optimizers]
    for opt, mean in zip(optimizers, means):
        opt.register_step_pre_hook(mean.before_step)

    def sync(params: Any) -> None:
        ids = {id(p) for p in params}
        for m in means:
            if m.ids & ids:
                m.average()

    policy.gradient_sync = sync
    return len(optimizers)


def member_seed(seed: int, rank: int, train_iter: int) -> int:
    """The package-RNG seed of learner ``rank`` (>= 1) of a group: each member draws its own noise for its share;
    rank 0 keeps the run's RNGs (restored on resume)."""
    return int(np.random.SeedSequence([int(seed), int(rank), int(train_iter)]).generate_state(1)[0] & 0x7FFFFFFF)


def check_digests(group: LearnerGroup, learner: BaseLearner) -> None:
    """Every rank logs its :func:`params_digest`; rank 0 compares them (a mismatch is a :class:`LearnerGroupError`)."""
    digest = params_digest(learner.policy)
    learner.info(f"learner group: final parameters sha256 {digest} at train_iter {learner.train_iter}")
    parts = group.gather(digest.encode())
    if parts is None:
        return
    digests = [p.decode(errors="replace") for p in parts]
    if len(set(digests)) != 1:
        raise LearnerGroupError(f"the {group.size} learners ended with different parameters (sha256 per rank: "
                                f"{', '.join(d[:12] for d in digests)}): gradients were not averaged the same way")
    learner.info(f"learner group: parameters identical on all {group.size} learners")


def _group_link(cfg: Any, name: str, token: str | None = None) -> tuple[str, str]:
    """A group member's rendezvous file (next to the run's data directory) and the run's token."""
    if not cfg.get("path_data"):
        raise ConfigError(f"{name}: several learners need path_data in the learner's config (the learner group's "
                          "rendezvous file goes next to it)")
    token = resolve_token(token or cfg.get("auth_token"), where=f"{name}: system_config.auth_token")
    return rendezvous_path(str(cfg.path_data)), token


class _GroupHook(LearnerHook):
    """Before the run: take rank 0's model, average gradients, reseed a member, reduce logged scalars over the group.
    After each iteration: average the buffers, merge the shares' priority infos at rank 0 (cut to ``batch_len()``)."""

    def __init__(self, group: LearnerGroup, position: str, batch_len: Any = None, seed: int = 0) -> None:
        super().__init__(f"learner_group_{position}", 35 if position == "after_iter" else 0, position=position)
        self._group = group
        self._batch_len = batch_len
        self._seed = int(seed)
        self._buffers: list = []

    def __call__(self, engine: BaseLearner) -> None:
        if self.position == "before_run":
            attach_policy(engine.policy, self._group)
            if self._group.rank > 0:
                set_pkg_seed(member_seed(self._seed, self._group.rank, engine.train_iter))
            for hook in engine.hooks["after_iter"]:
                if isinstance(hook, LogReduceHook):  # its allreduce, like every collective, names a lost member
                    hook.reducer = self._group.all_reduce_mean
            return
        if not self._buffers:
            self._buffers = _policy_parts(engine.policy)[1]
        self._group.average_buffers(self._buffers)
        parts = self._group.gather(encode(engine.priority_info, compress=False))
        if parts is not None:
            infos = [decode(p, where=f"learner {i}'s priority info") for i, p in enumerate(parts)]
            engine.priority_info = LearnerAggregator.merge_info(infos, self._batch_len())


class _StopMembersHook(LearnerHook):
    """Rank 0, after its run: train a batch already sent, then tell the other ranks to stop."""

    def __init__(self, aggregator: LearnerAggregator) -> None:
        super().__init__("learner_group_stop", 0, position="after_run")
        self._aggregator = aggregator

    def __call__(self, engine: BaseLearner) -> None:
        self._aggregator.finish_sent_batch(engine)
        self._aggregator.stop_members()


class LearnerAggregator(FlaskFileSystemLearner):
    """``learner0`` of a group of learners: the coordinator's one learner; the group forms on its start task."""

    config = dict(FlaskFileSystemLearner.config, **GROUP_CONFIG)
    _column_batches = False  # each batch is split into the ranks' shares of sample dicts

    def __init__(self, cfg: Any, name: str = "learner0", token: str | None = None) -> None:
        super().__init__(cfg, name=name, token=token)
        self._size = int(self._cfg.learner_num)
        if self._size < 2 or int(self._cfg.learner_rank) != 0:
            raise ConfigError(f"{name}: a LearnerAggregator is rank 0 of 2 or more learners (got learner_num "
                              f"{self._size}, learner_rank {self._cfg.learner_rank})")
        self._rendezvous, self._token = _group_link(self._cfg, name, token)
        self._group: LearnerGroup | None = None
        self._stopped_members = False
        self._batch_len: int | None = None
        self._sent: tuple[list, int] | None = None  # rank 0's share of the last batch sent, and train_iter then

    def close(self) -> None:
        """Stop training and the other learners, leave the group (removing the rendezvous file), close the slave."""
        try:
            super().close()
        finally:
            if self._group is not None:
                self._group.close(self._rendezvous)

    @staticmethod
    def merge_info(infos: list[Any], n: int | None = None) -> Any:
        """One learner's info from the group's (in rank order): list-like values (priorities, replay ids) are
        concatenated in the order of the batch's shares (and cut to ``n``, the batch's length), dicts merged key by
        key, anything else is rank 0's."""
        if not infos or all(v is None for v in infos):
            return None
        first = infos[0]
        if isinstance(first, dict):
            return {k: LearnerAggregator.merge_info([v.get(k) if isinstance(v, dict) else None for v in infos], n)
                    for k in first}
        if isinstance(first, np.ndarray) and first.ndim > 0:
            return np.concatenate([np.asarray(v).reshape(-1, *first.shape[1:]) for v in infos])[:n]
        if isinstance(first, (list, tuple)):
            return [x for v in infos for x in (v or [])][:n]
        return first

    def _start_learning(self, task: LearnerStartTask) -> LearnerStarted:
        cfg = EasyDict(task.main_config)
        batch_size = int(cfg.policy.learn.batch_size)
        if batch_size < self._size:
            raise ConfigError(f"policy.learn.batch_size ({batch_size}) is smaller than learner_num ({self._size}): "
                              "each learner trains on a share of each batch")
        backend = pick_backend(bool(cfg.policy.get("cuda", False)))
        self._group = LearnerGroup.host(self._rendezvous, str(self._cfg.host),
                                        str(self._cfg.get("advertise_host") or self._cfg.host), self._size, backend,
                                        float(self._cfg.group_timeout), self.name, self._token)
        self._group.send(KIND_DATA, json.dumps(task.to_json()).encode())
        return super()._start_learning(task)

    def get_data(self, batch_size: int) -> list | None:
        samples = super().get_data(batch_size)
        learner = self._trainer.learner
        if samples is None or learner is None or learner.stop_requested:  # (a batch sent must be trained)
            self.stop_members()
            return None
        self._batch_len = len(samples)
        assert self._group is not None
        self._group.send(KIND_DATA, encode(samples, compress=False))
        share = split_batch(samples, self._size)[0]
        self._sent = (share, learner.train_iter)
        return share

    def finish_sent_batch(self, engine: BaseLearner) -> None:
        """After the run: train a batch the other ranks got but this learner did not (a stop request came between
        the data and the update), or they would wait for its gradients."""
        if self._sent is not None and engine.train_iter == self._sent[1] and not self._stopped_members:
            engine.train(self._sent[0])
        self._sent = None

    def on_idle(self) -> None:
        """While rank 0 waits for data, the other ranks wait in a broadcast: keep it alive."""
        group = self._group
        if group is not None and not self._stopped_members and time.monotonic() - group.sent_at > _KEEPALIVE_S:
            group.send(KIND_KEEPALIVE)

    def stop_members(self) -> None:
        """Tell the other ranks to stop, then check that every rank ends with the same parameters."""
        if self._group is not None and not self._stopped_members:
            self._stopped_members = True
            self._group.send(KIND_STOP)
            if self._trainer.learner is not None:
                check_digests(self._group, self._trainer.learner)

    @property
    def hooks4call(self) -> list:
        hooks = super().hooks4call
        if self._group is not None:
            hooks += [_GroupHook(self._group, "before_run"),
                      _GroupHook(self._group, "after_iter", lambda: self._batch_len),
                      _StopMembersHook(self)]
        return hooks


class LearnerGroupMember:
    """``learnerN`` (N >= 1) of a group of learners: follows rank 0 through the group."""

    def __init__(self, cfg: Any, name: str) -> None:
        self._cfg = EasyDict(dict(GROUP_CONFIG, **dict(cfg)))
        self.name = name
        self.rank, self.size = int(self._cfg.learner_rank), int(self._cfg.learner_num)
        if not 1 <= self.rank < self.size:
            raise ConfigError(f"{name}: learner_rank must be in 1..{self.size - 1} (learner_num {self.size}), got "
                              f"{self.rank}")
        self._rendezvous, self._token = _group_link(self._cfg, name)
        self._group: LearnerGroup | None = None
        self.learner: BaseLearner | None = None
        self._stopped = False

    def run(self) -> int:
        """Join the group, build the learner from rank 0's start task, train until rank 0 stops; 0 when it did."""
        self._group = LearnerGroup.join(self._rendezvous, self.rank, self.size, float(self._cfg.group_timeout),
                                        self.name, self._token)
        try:
            kind, payload = self._next_message()
            if kind != KIND_DATA:
                return 0  # stopped before it started (no digest exchange: rank 0 had no learner)
            task = LearnerStartTask.from_json(json.loads(payload), peer="learner0 (through the learner group)")
            run_dir(task.path_data, self._cfg.get("path_data"), "LearnerStartTask.path_data")
            hooks = [_GroupHook(self._group, "before_run", seed=task.seed), _GroupHook(self._group, "after_iter")]
            # (the same checkpoint rank 0 loads: the optimizer state matches too)
            learner, _ = build_task_learner(task, self.name, self._get_data, hooks)
            self.learner = learner
            learner.info(f"rank {self.rank} of {self.size} learners ({self._group.backend}) starts at train_iter "
                         f"{learner.train_iter}")
            learner.start()
            while not self._stopped:  # (training ended by itself: train_iterations) rank 0 stops the group
                self._get_data(0)
            check_digests(self._group, learner)
            learner.info(f"rank {self.rank} stopped at train_iter {learner.train_iter}")
            return 0
        finally:
            if self.learner is not None:
                self.learner.close()
            self._group.close()

    def _next_message(self) -> tuple[int, bytes]:
        assert self._group is not None
        while True:
            kind, payload = self._group.receive()
            if kind != KIND_KEEPALIVE:
                return kind, payload

    def _get_data(self, batch_size: int) -> list | None:
        kind, payload = self._next_message()
        if kind == KIND_STOP:
            self._stopped = True
            return None
        try:
            samples = decode(payload, where="a batch from learner0")
        except DataFileError as e:
            raise LearnerGroupError(f"{self.name}: a malformed batch from learner0: {e}") from e
        return split_batch(samples, self.size)[self.rank]


def run_group_member(cfg: Any, name: str) -> int:
    """The process of ``learnerN`` (N >= 1): 0 when rank 0 stopped the group; a lost group raises
    :class:`LearnerGroupError` (one line: which rank, what broke)."""
    return LearnerGroupMember(cfg, name).run()
