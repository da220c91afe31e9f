"""MASAC's models: ``MAQAC`` (DI-engine's ``discrete_maqac``), a categorical actor shared by the agents and (twin)
critics of every action's Q-value on the global state; ``ContinuousMAQAC`` (``continuous_maqac``), a squashed-Gaussian
actor shared by the agents and (twin) critics of Q(global state, the agent's action). Inputs are DI-engine's
multi-agent observation dicts, batched (see ``mavac.py``)."""
from __future__ import annotations

from typing import Any, Mapping

import torch
import torch.nn as nn

from ding.config.ranges import at_least, shape
from ding.utils import MODEL_REGISTRY

from ..common import DiscreteHead, RegressionHead, ReparameterizationHead
from ..common.nn_module import mlp
from .mavac import mask_logit, per_agent_state

MODES = ("compute_actor", "compute_critic")


@MODEL_REGISTRY.register("discrete_maqac")
class MAQAC(nn.Module):
    """``compute_actor(obs)`` -> ``{'logit': (B, A, n)}`` (unavailable actions masked); ``compute_critic(obs)`` ->
    ``{'q_value': (B, A, n)}``, a list of two with ``twin_critic``. The critics read ``global_state`` (agent-specific
    (B, A, D) or shared (B, D), repeated per agent)."""

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
        return {"logit": mask_logit(self.actor(inputs["agent_state"])["logit"], inputs.get("action_mask"))}

    def compute_critic(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        x = per_agent_state(inputs["global_state"], inputs["agent_state"].shape[-2])
        q = [c(x)["logit"] for c in self.critic]
        return {"q_value": q if self.twin_critic else q[0]}


MODEL_REGISTRY.register("maqac", MAQAC)


@MODEL_REGISTRY.register("continuous_maqac")
class ContinuousMAQAC(nn.Module):
    """``compute_actor(obs)`` -> ``{'logit': [mu, sigma]}``, each (B, A, action_shape), of the pre-tanh Gaussian;
    ``compute_critic({'obs': obs, 'action': (B, A, action_shape)})`` -> ``{'q_value': (B, A)}`` (a list of two with
    ``twin_critic``): each agent's Q of its ``global_state`` row (agent-specific, or shared and repeated) and its own
    action. ``action_space`` must be ``'reparameterization'`` (SAC's actor)."""

    config_ranges = MAQAC.config_ranges

    def __init__(
        self,
        agent_obs_shape: int,
        global_obs_shape: int,
        action_shape: int,
        action_space: str = "reparameterization",
        twin_critic: bool = False,
        actor_head_hidden_size: int = 64,
        actor_head_layer_num: int = 1,
        critic_head_hidden_size: int = 64,
        critic_head_layer_num: int = 1,
        activation: nn.Module | None = None,
        norm_type: str | None = None,
    ) -> None:
        super().__init__()
        if action_space != "reparameterization":
            raise ValueError(f"ContinuousMAQAC: action_space {action_space!r} is not built here; ding's multi-agent "
                             "SAC needs 'reparameterization' (set policy.model.action_space='reparameterization')")
        self.agent_obs_shape, self.global_obs_shape = int(agent_obs_shape), int(global_obs_shape)
        self.action_shape, self.twin_critic = int(action_shape), bool(twin_critic)
        self.action_space = action_space
        self.actor = nn.Sequential(
            mlp(self.agent_obs_shape, [actor_head_hidden_size], activation, norm_type),
            ReparameterizationHead(actor_head_hidden_size, self.action_shape, actor_head_layer_num,
                                   sigma_type="conditioned", activation=activation, norm_type=norm_type))

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
        out = self.actor(inputs["agent_state"])
        return {"logit": [out["mu"], out["sigma"]]}

    def compute_critic(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        obs, action = inputs["obs"], inputs["action"]
        x = torch.cat([per_agent_state(obs["global_state"], obs["agent_state"].shape[-2]), action], dim=-1)
        q = [c(x)["pred"] for c in self.critic]
        return {"q_value": q if self.twin_critic else q[0]}
