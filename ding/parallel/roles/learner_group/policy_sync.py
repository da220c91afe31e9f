"""Keeping a learner group's models identical: rank 0's tensors at start, gradients averaged before each optimizer
step, buffers averaged after it, and a digest of the final parameters compared across the ranks."""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np
import torch

from ding.parallel.roles.learner_group.group import LearnerGroup, LearnerGroupError
from ding.worker.learner.base_learner import BaseLearner


def _policy_object(view: Any) -> Any:
    """The policy instance behind a learn-mode view (a namedtuple of bound methods), or ``view`` itself."""
    return getattr(getattr(view, "forward", None), "__self__", view)


def _policy_parts(view: Any) -> tuple[list[torch.Tensor], list[torch.Tensor], list[torch.optim.Optimizer]]:
    """The tensors of every model of the policy (models inside model wrappers too; parameters and buffers, each
    once), the buffers among them, and its optimizers; in the order of the policy's attribute names (the same in
    every rank, list and tuple attributes flattened)."""
    policy = _policy_object(view)
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
    policy = _policy_object(view)
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


def policy_buffers(view: Any) -> list:
    """The buffers of every model of the policy (BatchNorm's running statistics), each once, in a fixed order."""
    return _policy_parts(view)[1]


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
