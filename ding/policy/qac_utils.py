"""What the continuous-action Q actor-critics (DDPG, TD3, SAC) share: the model check, the transition, the batch,
the one-line optimizer step and the frozen target copy."""
from __future__ import annotations

import copy
from typing import Any, NamedTuple, TypeVar

import torch
import torch.nn as nn

from ding.rl_utils import get_nstep_return_data
from ding.torch_utils import obs_to_float
from ding.utils import ConfigError
from ding.utils.data import SAMPLE_BATCH_TYPES, stack_field

# Every continuous policy here acts in [-1, 1]; the env maps that onto its own bounds (env.act_scale=True, see
# DingEnvWrapper.scale_action). check_policy_fits_env refuses an env whose Box has other bounds.
ACTION_BOUNDS = (-1.0, 1.0)


class QACBatch(NamedTuple):
    """A collated batch of transitions (or n-step samples), on the policy's device.

    ``reward``: (B,), or (nstep, B) for n-step samples. ``done``: (B,) float, 1.0 at a termination (never at a time
    limit). ``value_gamma``: (B,) discount of the bootstrap value of n-step samples, else None. ``weight``: (B,)
    importance-sampling weights when ``priority_IS_weight``, else None.
    """

    obs: torch.Tensor
    action: torch.Tensor
    reward: torch.Tensor
    next_obs: torch.Tensor
    done: torch.Tensor
    value_gamma: torch.Tensor | None
    weight: torch.Tensor | None


def check_actor_kind(model: nn.Module, wanted: str, policy: str) -> None:
    """The model must be a ContinuousQAC-like model whose actor is ``wanted`` ('regression' or
    'reparameterization'), with ``compute_actor`` / ``compute_critic``."""
    for method in ("compute_actor", "compute_critic"):
        if not callable(getattr(model, method, None)):
            raise ConfigError(f"policy.model: {policy} needs a model with compute_actor and compute_critic (like "
                              f"'continuous_qac'); {type(model).__name__} has no {method}")
    kind = getattr(model, "action_space", wanted)
    if kind != wanted:
        raise ConfigError(f"policy.model.action_space: {policy} needs action_space={wanted!r}, got {kind!r}; set "
                          f"policy.model.action_space={wanted!r}")


def qac_train_samples(transitions: list[dict[str, Any]], nstep: int, gamma: float) -> list[dict[str, Any]]:
    """The transitions themselves (``nstep == 1``) or n-step samples (see docs/policies.md, the n-step contract)."""
    return transitions if nstep == 1 else get_nstep_return_data(transitions, nstep, gamma)


def collate_qac_batch(data: list[dict[str, Any]], device: torch.device, *, ignore_done: bool = False,
                      use_is_weight: bool = False, where: str = "policy") -> QACBatch:
    """Stack the fields the losses read (one stack each) into a :class:`QACBatch`."""
    if not isinstance(data, SAMPLE_BATCH_TYPES) or len(data) == 0:
        got = "an empty list" if isinstance(data, SAMPLE_BATCH_TYPES) else type(data).__name__
        raise ValueError(f"{where} learn_mode.forward: expected a non-empty list of samples, got {got}")
    keys = ["obs", "action", "reward", "next_obs", "done"]
    if use_is_weight:
        keys.append("IS")
    missing = [k for k in keys if k not in data[0]]
    if missing:
        hint = (" ('IS' comes from a prioritized buffer: set policy.priority=True and use the 'advanced' buffer, "
                "or set policy.priority_IS_weight=False)" if "IS" in missing else
                " (samples must come from the policy's collect_mode.process_transition / get_train_sample)")
        raise ValueError(f"{where} learn_mode.forward: samples lack key(s) {missing}; they have "
                         f"{sorted(data[0].keys())}{hint}")
    if "value_gamma" in data[0]:
        keys.append("value_gamma")
    b = {k: stack_field(data, k) for k in keys}
    if device.type != "cpu":
        b = {k: v.to(device) for k, v in b.items()}
    n = b["obs"].shape[0]
    action = b["action"].float()
    reward = b["reward"].float().reshape(n, -1)
    reward = reward[:, 0] if reward.shape[1] == 1 else reward.t()  # (B,) or (nstep, B)
    done = torch.zeros(n, device=device) if ignore_done else b["done"].reshape(n).float()
    return QACBatch(obs_to_float(b["obs"]), action.reshape(n, -1), reward, obs_to_float(b["next_obs"]), done,
                    b.get("value_gamma"), b.get("IS"))


_ModuleT = TypeVar("_ModuleT", bound=nn.Module)


def frozen_copy(model: _ModuleT) -> _ModuleT:
    """A deep copy of ``model`` that autograd ignores (a target network)."""
    target = copy.deepcopy(model)
    target.requires_grad_(False)
    return target


def optimizer_step(optimizer: torch.optim.Optimizer, loss: torch.Tensor) -> None:
    """``zero_grad`` (to None), ``backward``, ``step``."""
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    optimizer.step()


def model_action_shape(model: nn.Module, cfg_shape: Any) -> int:
    """The number of action dimensions: the model's ``action_shape`` attribute, else ``policy.model.action_shape``."""
    shape = getattr(model, "action_shape", None)
    if shape is None:
        shape = cfg_shape
    if isinstance(shape, (list, tuple)):
        n = 1
        for s in shape:
            n *= int(s)
        return n
    if shape is None:
        raise ConfigError("policy.model.action_shape: not set, and the model has no action_shape attribute; set "
                          "it to the env's action dimension (e.g. 1 for Pendulum)")
    return int(shape)


class ModeSwitch:
    """``switch(training)``: ``model.train(training)`` when it changes, and nothing at all for models whose layers
    act the same in both modes.

    A collect step and a learn step alternate every iteration in these policies; ``nn.Module.train`` walks every
    submodule in Python, so it is skipped when the model holds no batch norm or dropout and no layer from outside
    ``torch.nn`` / ``ding.model`` (whose ``forward`` might read ``self.training``).
    """

    def __init__(self, model: nn.Module) -> None:
        self._model = model
        self._needed = any(_mode_dependent(m) for m in model.modules())

    def __call__(self, training: bool) -> None:
        if self._needed and self._model.training != training:
            self._model.train(training)


def _mode_dependent(module: nn.Module) -> bool:
    if isinstance(module, (nn.modules.batchnorm._BatchNorm, nn.modules.dropout._DropoutNd)):
        return True
    return not type(module).__module__.startswith(("torch.nn.", "ding.model."))


class PolyakUpdate:
    """``update(theta)``: ``target <- (1 - theta) * target + theta * source`` for every parameter in one fused call,
    buffers copied. The parameter lists are gathered once (``load_state_dict`` keeps the same tensors)."""

    def __init__(self, target: nn.Module, source: nn.Module) -> None:
        self._target: list[torch.Tensor] = list(target.parameters())
        self._source: list[torch.Tensor] = list(source.parameters())
        self._buffers = list(zip(target.buffers(), source.buffers()))

    @torch.no_grad()
    def update(self, theta: float) -> None:
        torch._foreach_lerp_(self._target, self._source, theta)
        for t, s in self._buffers:
            t.copy_(s)


class HeldFixed:
    """``with held_fixed:`` the given parameters take no gradient (e.g. the critics while the actor's loss is
    differentiated through them); the list is gathered once."""

    def __init__(self, module: nn.Module) -> None:
        self._params = [p for p in module.parameters() if p.requires_grad]

    def __enter__(self) -> None:
        for p in self._params:
            p.requires_grad_(False)

    def __exit__(self, *exc: Any) -> None:
        for p in self._params:
            p.requires_grad_(True)
