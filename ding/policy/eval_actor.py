"""A policy's eval-mode action as one torch module, for export (``ding -m export``, ``LoadedPolicy.export``).

``eval_actor(policy)`` returns an :class:`EvalActor`: a module mapping a batch of observations (and, for a recurrent
policy, the batch's states) to the actions ``eval_mode.forward`` picks for them, with the model's preprocessing
inside (uint8 pixels scaled to [0, 1], other observations cast to float32) and no exploration: the argmax of the Q
values or logits for discrete actions, the deterministic action (``tanh(mu)`` for SAC, the actor's tanh output for
DDPG/TD3, the Gaussian's mean for PPO/A2C) for continuous ones. Each policy family registers how its eval action is
computed; a policy class that overrides ``_forward_eval`` of the class it was registered under is refused (its eval
action may be anything), until it registers a builder of its own with :func:`register_eval_actor`.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Callable

import torch
import torch.nn as nn

from ding.model.common import set_noise
from ding.torch_utils.data_helper import obs_to_float
from ding.utils import ExportError

from .actor_critic import ActorCriticPolicy
from .base_policy import Policy
from .common_utils import model_obs_shape
from .ddpg import DDPGPolicy
from .dqn import DQNPolicy
from .r2d2 import R2D2Policy
from .rainbow import RainbowPolicy
from .sac import SACPolicy

ACTION_KINDS = ("discrete", "continuous")


@dataclass(frozen=True)
class EvalActor:
    """``module(obs)`` -> actions (B,) int64 or (B, A) float32; a recurrent one is ``module(obs, state)`` ->
    ``(actions, next_state)`` with states of shape ``(B, *state_shape)`` (zeros at an episode's start)."""

    module: nn.Module
    obs_shape: tuple[int, ...]
    action_kind: str  # one of ACTION_KINDS
    state_shape: tuple[int, ...] | None = None

    @property
    def recurrent(self) -> bool:
        return self.state_shape is not None


Builder = Callable[[Policy], EvalActor]
_BUILDERS: dict[type, Builder] = {}


def register_eval_actor(policy_cls: type) -> Callable[[Builder], Builder]:
    """Decorator: ``builder(policy) -> EvalActor`` makes ``policy_cls`` (and subclasses that keep its
    ``_forward_eval``) exportable."""

    def register(builder: Builder) -> Builder:
        _BUILDERS[policy_cls] = builder
        return builder

    return register


def eval_actor(policy: Policy) -> EvalActor:
    """The eval-mode action of ``policy`` as a module (a copy of its model in eval mode; the policy is untouched)."""
    cls = type(policy)
    for base in cls.__mro__:
        builder = _BUILDERS.get(base)
        if builder is None:
            continue
        if getattr(cls, "_forward_eval", None) is not getattr(base, "_forward_eval", None):
            raise ExportError(
                f"export: {cls.__name__} overrides _forward_eval of {base.__name__}, so ding cannot tell what its "
                f"eval action is; register how it acts with ding.policy.eval_actor.register_eval_actor({cls.__name__})")
        return builder(policy)
    names = ", ".join(sorted(c.__name__ for c in _BUILDERS))
    raise ExportError(f"export: {cls.__name__} (policy type {policy.cfg.get('type')!r}) cannot be exported: ding "
                      f"knows the eval action of {names} and their subclasses; register one for it with "
                      "ding.policy.eval_actor.register_eval_actor")


def _model_copy(policy: Policy, unused: tuple[str, ...] = ()) -> tuple[nn.Module, tuple[int, ...]]:
    """A copy of the policy's model in eval mode, without the submodules named in ``unused`` (critics: the actor
    never reads them, and a TorchScript file would carry their weights)."""
    model = copy.deepcopy(policy._model).cpu().eval()
    for name in unused:
        if isinstance(getattr(model, name, None), nn.Module):
            setattr(model, name, nn.Identity())
    shape = model_obs_shape(model)
    if shape is None:
        raise ExportError(f"export: {type(policy).__name__}'s model {type(model).__name__} has no obs_shape; an "
                          "exported file needs a fixed observation shape (give the model an obs_shape attribute)")
    for p in model.parameters():
        p.requires_grad_(False)
    return model, shape


class _ModelActor(nn.Module):
    """Holds the policy's model; each subclass's ``forward`` is one family's eval action."""

    model: Any  # the policy's model (its forward / compute_actor)

    def __init__(self, model: nn.Module, continuous: bool = False) -> None:
        super().__init__()
        self.model, self.continuous = model, continuous


class _QArgmax(_ModelActor):
    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.model(obs_to_float(obs))["logit"].argmax(dim=1)


class _RecurrentQArgmax(_ModelActor):
    def forward(self, obs: torch.Tensor, state: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.model(obs_to_float(obs), state)
        return out["logit"].argmax(dim=1), out["next_state"]


class _VACActor(_ModelActor):
    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        logit = self.model.compute_actor(obs_to_float(obs))["logit"]
        return logit["mu"] if self.continuous else logit.argmax(dim=1)


class _SquashedMean(_ModelActor):
    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return torch.tanh(self.model.compute_actor(obs_to_float(obs))["logit"][0])


class _Deterministic(_ModelActor):
    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        action = self.model.compute_actor(obs_to_float(obs))["action"]
        return action if action.dim() == 2 else action.reshape(action.shape[0], -1)


@register_eval_actor(DQNPolicy)
def _dqn_actor(policy: Policy) -> EvalActor:
    model, shape = _model_copy(policy)
    return EvalActor(_QArgmax(model), shape, "discrete")


@register_eval_actor(RainbowPolicy)
def _rainbow_actor(policy: Policy) -> EvalActor:
    model, shape = _model_copy(policy)
    set_noise(model, False)  # evaluation acts on the noise-free (mean) network
    return EvalActor(_QArgmax(model), shape, "discrete")


@register_eval_actor(R2D2Policy)
def _r2d2_actor(policy: Policy) -> EvalActor:
    model, shape = _model_copy(policy)
    hidden: Any = model.hidden_size  # DRQN's LSTM width: a state is (h, c)
    return EvalActor(_RecurrentQArgmax(model), shape, "discrete", state_shape=(2, int(hidden)))


@register_eval_actor(ActorCriticPolicy)
def _actor_critic_actor(policy: Policy) -> EvalActor:
    model, shape = _model_copy(policy, unused=("critic_encoder", "critic_head"))
    continuous = policy.cfg.action_space == "continuous"
    return EvalActor(_VACActor(model, continuous), shape, "continuous" if continuous else "discrete")


@register_eval_actor(SACPolicy)
def _sac_actor(policy: Policy) -> EvalActor:
    model, shape = _model_copy(policy, unused=("critic",))
    return EvalActor(_SquashedMean(model), shape, "continuous")


@register_eval_actor(DDPGPolicy)
def _ddpg_actor(policy: Policy) -> EvalActor:
    model, shape = _model_copy(policy, unused=("critic",))
    return EvalActor(_Deterministic(model), shape, "continuous")
