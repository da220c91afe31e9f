"""MASAC's models: ``MAQAC`` (DI-engine's ``DiscreteMAQAC``), a discrete actor shared by the agents and (twin)
critics of every action's Q-value on the global state; ``ContinuousMAQAC``, its continuous-action form. Inputs are
DI-engine's multi-agent observation dicts, batched (see ``mavac.py``)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch
import torch.nn as nn

from ding.config.ranges import at_least, one_of, shape
from ding.utils import MODEL_REGISTRY
from ding.utils.default_helper import squeeze

from ..common import DiscreteHead, RegressionHead, ReparameterizationHead
from ..common.nn_module import mlp
from .mavac import mask_logit, per_agent_state

MODES = ("compute_actor", "compute_critic")


@MODEL_REGISTRY.register("maqac")
class MAQAC(nn.Module):
    """``compute_actor(obs)`` -> ``{'logit': (B, A, n)}`` (unavailable actions masked); ``compute_critic(obs)`` ->
    ``{'q_value': (B, A, n)}``, a list of two with ``twin_critic``. The critics read ``global_state`` (agent-specific
    (B, A, D) or shared (B, D), repeated per agent). ``inputs`` is the observation dict or, as DI-engine's
    ``DiscreteMAQAC`` takes it, a dict holding it under ``'obs'``."""

    config_ranges = {
        "agent_obs_shape": shape(),
        "global_obs_shape": shape(),
        "action_shape": shape(),
        "actor_head_hidden_size": at_least(1, integer=True),
        "actor_head_layer_num": at_least(0, integer=True),
        "critic_head_hidden_size": at_least(1, integer=True),
        "critic_head_layer_num": at_least(0, integer=True),
    }

    def __init__(
        self,
        agent_obs_shape: int,
        global_obs_shape: int,
        action_shape: int,
        twin_critic: bool = False,
        actor_head_hidden_size: int = 64,
        actor_head_layer_num: int = 1,
        critic_head_hidden_size: int = 64,
        critic_head_layer_num: int = 1,
        activation: nn.Module | None = None,
        norm_type: str | None = None,
    ) -> None:
        super().__init__()
        self.agent_obs_shape, self.global_obs_shape = int(agent_obs_shape), int(global_obs_shape)
        self.action_shape, self.twin_critic = int(action_shape), bool(twin_critic)
        self.actor = nn.Sequential(
            mlp(self.agent_obs_shape, [actor_head_hidden_size], activation, norm_type),
            DiscreteHead(actor_head_hidden_size, self.action_shape, actor_head_layer_num, activation, norm_type))

        def critic() -> nn.Module:
            return nn.Sequential(
                mlp(self.global_obs_shape, [critic_head_hidden_size], activation, norm_type),
                DiscreteHead(critic_head_hidden_size, self.action_shape, critic_head_layer_num, activation,
                             norm_type))

        self.critic = nn.ModuleList([critic() for _ in range(2 if self.twin_critic else 1)])

    def forward(self, inputs: Mapping[str, Any], mode: str) -> dict[str, Any]:
        if mode not in MODES:
            raise ValueError(f"MAQAC.forward: unknown mode {mode!r}; use one of {MODES}")
        return getattr(self, mode)(inputs)

    def compute_actor(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        obs = _observation(inputs)
        return {"logit": mask_logit(self.actor(obs["agent_state"])["logit"], obs.get("action_mask"))}

    def compute_critic(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        obs = _observation(inputs)
        x = per_agent_state(obs["global_state"], obs["agent_state"].shape[-2])
        q = [c(x)["logit"] for c in self.critic]
        return {"q_value": q if self.twin_critic else q[0]}


def _observation(inputs: Mapping[str, Any]) -> Mapping[str, Any]:
    """The multi-agent observation dict: ``inputs`` itself, or ``inputs['obs']`` (DI-engine's batch form)."""
    if "agent_state" in inputs:
        return inputs
    obs = inputs.get("obs")
    if not isinstance(obs, Mapping) or "agent_state" not in obs:
        raise KeyError(f"MAQAC: expected an observation dict with 'agent_state' (or one under 'obs'), got keys "
                       f"{sorted(inputs)}")
    return obs


DiscreteMAQAC = MAQAC
MODEL_REGISTRY.register("discrete_maqac", MAQAC)


@MODEL_REGISTRY.register("continuous_maqac")
class ContinuousMAQAC(nn.Module):
    """Continuous-action MASAC / MATD3 model, one actor shared by the agents.

    ``compute_actor(obs)``: ``action_space='regression'`` -> ``{'action': (B, A, act) in [-1, 1]}``;
    ``'reparameterization'`` -> ``{'logit': [mu, sigma]}`` (B, A, act) of a Gaussian. ``compute_critic({'obs',
    'action'})`` -> ``{'q_value': (B, A)}`` (a list of two with ``twin_critic``) from each agent's global state and
    action.
    """

    config_ranges = {**MAQAC.config_ranges, "action_space": one_of("regression", "reparameterization")}

    def __init__(
        self,
        agent_obs_shape: int,
        global_obs_shape: int,
        action_shape: int | Sequence[int],
        action_space: str = "reparameterization",  # SAC's actor (MATD3's: 'regression')
        twin_critic: bool = False,
        actor_head_hidden_size: int = 64,
        actor_head_layer_num: int = 1,
        critic_head_hidden_size: int = 64,
        critic_head_layer_num: int = 1,
        activation: nn.Module | None = None,
        norm_type: str | None = None,
    ) -> None:
        super().__init__()
        if action_space not in ("regression", "reparameterization"):
            raise ValueError(f"ContinuousMAQAC action_space: unknown {action_space!r}; use 'regression' or "
                             f"'reparameterization'")
        self.agent_obs_shape, self.global_obs_shape = int(agent_obs_shape), int(global_obs_shape)
        self.action_shape = int(squeeze(action_shape))
        self.action_space, self.twin_critic = action_space, bool(twin_critic)
        head: nn.Module
        if action_space == "regression":
            head = RegressionHead(actor_head_hidden_size, self.action_shape, actor_head_layer_num, final_tanh=True,
                                  activation=activation, norm_type=norm_type)
        else:
            head = ReparameterizationHead(actor_head_hidden_size, self.action_shape, actor_head_layer_num,
                                          sigma_type="conditioned", activation=activation, norm_type=norm_type)
        self.actor = nn.Sequential(mlp(self.agent_obs_shape, [actor_head_hidden_size], activation, norm_type), head)

        def critic() -> nn.Module:
            return nn.Sequential(
                mlp(self.global_obs_shape + self.action_shape, [critic_head_hidden_size], activation, norm_type),
                RegressionHead(critic_head_hidden_size, 1, critic_head_layer_num, activation=activation,
                               norm_type=norm_type))

        self.critic = nn.ModuleList([critic() for _ in range(2 if self.twin_critic else 1)])

    def forward(self, inputs: Mapping[str, Any], mode: str) -> dict[str, Any]:
        if mode not in MODES:
            raise ValueError(f"ContinuousMAQAC.forward: unknown mode {mode!r}; use one of {MODES}")
        return getattr(self, mode)(inputs)

    def compute_actor(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        out = self.actor(_observation(inputs)["agent_state"])
        if self.action_space == "regression":
            return {"action": out["pred"]}
        return {"logit": [out["mu"], out["sigma"]]}

    def compute_critic(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        obs = _observation(inputs)
        action = inputs["action"]
        if action.dim() == obs["agent_state"].dim() - 1:  # a 1-d action given without its last axis
            action = action.unsqueeze(-1)
        x = torch.cat([per_agent_state(obs["global_state"], obs["agent_state"].shape[-2]), action], dim=-1)
        q = [c(x)["pred"] for c in self.critic]
        return {"q_value": q if self.twin_critic else q[0]}
