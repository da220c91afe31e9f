"""MAPPO's actor-critic (``MAVAC``): one actor shared by the agents, a centralized critic on the global state.

Inputs are DI-engine's multi-agent observation dicts, batched: ``agent_state`` (B, A, obs_dim), ``global_state``
(B, state_dim) or agent-specific (B, A, state_dim), ``action_mask`` (B, A, n_actions); A is the agent axis.
"""
from __future__ import annotations

from typing import Any, Mapping

import torch
import torch.nn as nn

from ding.config.ranges import at_least, one_of, shape
from ding.utils import MODEL_REGISTRY

from ..common import DiscreteHead, RegressionHead
from ..common.nn_module import NORM_TYPES, mlp

MODES = ("compute_actor", "compute_critic", "compute_actor_critic")
MASKED_LOGIT = -1e8  # the logit of an unavailable action: probability exp(-1e8) = 0
CRITIC_INPUTS = ("global_state", "agent_state")


def mask_logit(logit: torch.Tensor, action_mask: torch.Tensor | None) -> torch.Tensor:
    """``logit`` with the unavailable actions (``action_mask == 0``) set to :data:`MASKED_LOGIT`."""
    if action_mask is None:
        return logit
    return logit.masked_fill(action_mask <= 0, MASKED_LOGIT)


def per_agent_state(state: torch.Tensor, agent_num: int) -> torch.Tensor:
    """A global state (B, D) repeated for each agent -> (B, A, D); an agent-specific one (B, A, D) as it is."""
    return state if state.dim() == 3 else state.unsqueeze(1).expand(-1, agent_num, -1)


@MODEL_REGISTRY.register("mavac")
class MAVAC(nn.Module):
    """``forward(inputs, mode)``: ``'compute_actor'`` -> ``{'logit': (B, A, n_actions)}`` (unavailable actions
    masked), ``'compute_critic'`` -> ``{'value': (B, A)}``, ``'compute_actor_critic'`` -> both.

    The critic reads ``global_state`` (centralized: MAPPO) or, with ``critic_input='agent_state'``, each agent's own
    observation (independent PPO, the baseline).
    """

    config_ranges = {
        "agent_obs_shape": shape(),
        "global_obs_shape": shape(),
        "action_shape": shape(),
        "agent_num": at_least(1, integer=True),
        "action_space": one_of("discrete"),
        "actor_head_hidden_size": at_least(1, integer=True),
        "actor_head_layer_num": at_least(0, integer=True),
        "critic_head_hidden_size": at_least(1, integer=True),
        "critic_head_layer_num": at_least(0, integer=True),
        "norm_type": one_of(*NORM_TYPES),
        "critic_input": one_of(*CRITIC_INPUTS),
    }

    def __init__(
        self,
        agent_obs_shape: int,
        global_obs_shape: int,
        action_shape: int,
        agent_num: int,
        actor_head_hidden_size: int = 256,
        actor_head_layer_num: int = 2,
        critic_head_hidden_size: int = 512,
        critic_head_layer_num: int = 1,
        action_space: str = "discrete",
        activation: nn.Module | None = None,
        norm_type: str | None = None,
        sigma_type: str = "independent",
        bound_type: str | None = None,
        encoder: tuple[nn.Module, nn.Module] | None = None,
        critic_input: str = "global_state",
    ) -> None:
        super().__init__()
        if action_space != "discrete":
            raise ValueError(f"MAVAC action_space: {action_space!r} is not supported; ding's MAPPO acts in discrete "
                             "action spaces ('discrete')")
        self.agent_num, self.action_space, self.critic_input = int(agent_num), action_space, critic_input
        self.agent_obs_shape, self.global_obs_shape = int(agent_obs_shape), int(global_obs_shape)
        self.action_shape = int(action_shape)
        critic_in = self.agent_obs_shape if critic_input == "agent_state" else self.global_obs_shape
        if encoder is not None:
            # DI-engine's ``encoder=(actor_encoder, critic_encoder)``: their outputs must be actor_head_hidden_size
            # and critic_head_hidden_size wide
            if not (isinstance(encoder, (tuple, list)) and len(encoder) == 2
                    and all(isinstance(e, nn.Module) for e in encoder)):
                raise ValueError("MAVAC encoder: give a pair of nn.Modules (actor_encoder, critic_encoder), got "
                                 f"{encoder!r}")
            self.actor_encoder, self.critic_encoder = encoder[0], encoder[1]
        else:
            self.actor_encoder = mlp(self.agent_obs_shape, [actor_head_hidden_size], activation, norm_type)
            self.critic_encoder = mlp(critic_in, [critic_head_hidden_size], activation, norm_type)
        self.actor_head = DiscreteHead(actor_head_hidden_size, self.action_shape, actor_head_layer_num, activation,
                                       norm_type)
        self.critic_head = RegressionHead(critic_head_hidden_size, 1, critic_head_layer_num, activation=activation,
                                          norm_type=norm_type)

    @property
    def actor(self) -> nn.Module:
        """The actor's modules (encoder, head) as DI-engine's ``model.actor`` groups them (a view: the parameters are
        the model's own, the state-dict keys stay ``actor_encoder.*`` / ``actor_head.*``)."""
        return nn.ModuleList([self.actor_encoder, self.actor_head])

    @property
    def critic(self) -> nn.Module:
        """The critic's modules (encoder, head), as :attr:`actor` for the actor."""
        return nn.ModuleList([self.critic_encoder, self.critic_head])

    def forward(self, inputs: Mapping[str, Any], mode: str) -> dict[str, Any]:
        if mode not in MODES:
            raise ValueError(f"MAVAC.forward: unknown mode {mode!r}; use one of {MODES}")
        return getattr(self, mode)(inputs)

    def compute_actor(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        logit = self.actor_head(self.actor_encoder(inputs["agent_state"]))["logit"]
        return {"logit": mask_logit(logit, inputs.get("action_mask"))}

    def compute_critic(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        x = inputs[self.critic_input]
        if self.critic_input == "global_state":
            x = per_agent_state(x, inputs["agent_state"].shape[-2])
        return {"value": self.critic_head(self.critic_encoder(x))["pred"]}

    def compute_actor_critic(self, inputs: Mapping[str, Any]) -> dict[str, Any]:
        return {**self.compute_actor(inputs), **self.compute_critic(inputs)}

