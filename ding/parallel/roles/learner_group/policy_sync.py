"""Keeping a learner group's models identical: rank 0's tensors at start, gradients averaged before each optimizer
step, buffers averaged after it, and a digest of the final parameters compared across the ranks."""
from __future__ import annotations

import hashlib
from typing import Any

import numpy as np

from ding.parallel.roles.learner_group.group import LearnerGroup, LearnerGroupError
from ding.worker.learner.base_learner import BaseLearner


def _policy_object(view: Any) -> Any:
    """The policy instance behind a learn-mode view (a namedtuple of bound methods), or ``view`` itself."""
    forward = getattr(view, "forward", None)
    return getattr(forward, "__self__", view)


def _policy_values(view: Any) -> list:
    """The policy's attribute values (list and tuple attributes flattened), in the order of its attribute names
    (the same in every rank)."""
    policy = _policy_object(view)
    out: list = []
    for key in sorted(vars(policy)):
        value = getattr(policy, key)
        out.extend(value if isinstance(value, (list, tuple)) else [value])
    return out


def _policy_modules(view: Any) -> list:
    """The policy's torch modules (models, and the models inside model wrappers)."""
    import torch

    modules = []
    for v in _policy_values(view):
        module = v if isinstance(v, torch.nn.Module) else getattr(v, "_model", None)
        if isinstance(module, torch.nn.Module):
            modules.append(module)
    return modules


def _policy_parts(view: Any) -> tuple[list, list]:
    """The tensors of every model of the policy (parameters and buffers, each once) and its optimizers."""
    import torch

    tensors: list[torch.Tensor] = []
    seen: set[int] = set()
    for module in _policy_modules(view):
        for t in module.state_dict(keep_vars=True).values():
            if isinstance(t, torch.Tensor) and id(t) not in seen:
                seen.add(id(t))
                tensors.append(t)
    return tensors, [v for v in _policy_values(view) if isinstance(v, torch.optim.Optimizer)]


def params_digest(view: Any) -> str:
    """sha256 of the policy's model tensors (see :func:`_policy_parts`): equal digests, bit-identical models."""
    tensors, _ = _policy_parts(view)
    h = hashlib.sha256()
    for t in tensors:
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
    the group before it steps (or before the policy clips them). Returns the number of optimizers hooked."""
    policy = _policy_object(view)
    tensors, optimizers = _policy_parts(view)
    if not optimizers:
        raise LearnerGroupError(f"{type(policy).__name__} has no torch optimizer among its attributes: several "
                                "learners (learner_num > 1) cannot average its gradients")
    group.broadcast_tensors(tensors)
    means = [_GradientMean(group, [p for g in opt.param_groups for p in g["params"]]) for opt in optimizers]
    for opt, mean in zip(optimizers, means):
        opt.register_step_pre_hook(lambda o, args, kwargs, m=mean: m.before_step())

    def sync(params: Any) -> None:
        ids = {id(p) for p in params}
        for m in means:
            if m.ids & ids:
                m.average()

    policy.gradient_sync = sync
    return len(optimizers)


def policy_buffers(view: Any) -> list:
    """The buffers of every model of the policy (BatchNorm's running statistics), each once, in a fixed order."""
    import torch

    tensors, _ = _policy_parts(view)
    buffers = {id(b) for m in _policy_modules(view) for b in m.buffers()}
    return [t for t in tensors if id(t) in buffers and isinstance(t, torch.Tensor)]


def member_seed(seed: int, rank: int, train_iter: int) -> int:
    """The package-RNG seed of learner ``rank`` (>= 1) of a group, from the run's seed: each member draws its own
    noise (target noise, sampling) for its share; rank 0 keeps the run's RNGs (restored on resume)."""
    return int(np.random.SeedSequence([int(seed), int(rank), int(train_iter)]).generate_state(1)[0] & 0x7FFFFFFF)


def check_digests(group: LearnerGroup, learner: BaseLearner) -> None:
    """Every rank's :func:`params_digest`, compared at rank 0 (a mismatch is a :class:`LearnerGroupError`); each rank
    logs its own."""
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
