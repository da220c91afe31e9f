"""Continuous-action actor-critic with Q critics (DDPG / TD3 / SAC)."""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import torch
import torch.nn as nn

from ding.config.ranges import at_least, one_of, shape
from ding.utils import MODEL_REGISTRY

from ..common import RegressionHead, ReparameterizationHead, mlp
from ..common.nn_module import NORM_TYPES
from .q_learning import as_shape

ACTION_SPACES = ("regression", "reparameterization")
MODES = ("compute_actor", "compute_critic")


@MODEL_REGISTRY.register("continuous_qac")
class ContinuousQAC(nn.Module):
    """Actor and Q critic(s) for continuous actions.

    ``forward(obs, 'compute_actor')``: ``'regression'`` -> ``{'action'}`` in (-1, 1) (DDPG/TD3);
    ``'reparameterization'`` -> ``{'logit': [mu, sigma]}`` (SAC; a two-item list, as DI-engine's SAC unpacks it:
    ``mu, sigma = out['logit']``). ``forward({'obs', 'action'},
    'compute_critic')`` -> ``{'q_value'}``: (B,), or a list of two (B,) tensors with ``twin_critic``.
    """

    # Allowed values of the keyword arguments (policy.model.*), checked by create_model (ding/config/ranges.py).
    config_ranges = {
        "obs_shape": shape(),
        "action_shape": shape(),
        "action_space": one_of(*ACTION_SPACES),
        "actor_head_hidden_size": at_least(1, integer=True),
        "actor_head_layer_num": at_least(0, integer=True),
        "critic_head_hidden_size": at_least(1, integer=True),
        "critic_head_layer_num": at_least(0, integer=True),
        "norm_type": one_of(*NORM_TYPES),
    }

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int | Sequence[int],
        action_space: str = "regression",
        twin_critic: bool = False,
        actor_head_hidden_size: int = 64,
        actor_head_layer_num: int = 1,
        critic_head_hidden_size: int = 64,
        critic_head_layer_num: int = 1,
        activation: nn.Module | None = None,
        norm_type: str | None = None,
        encoder_hidden_size_list: Sequence[int] | None = None,
        share_encoder: bool = False,
    ) -> None:
        super().__init__()
        if action_space not in ACTION_SPACES:
            raise ValueError(f"ContinuousQAC action_space: unknown {action_space!r}; use one of {ACTION_SPACES}")
        # DI-engine's options for image observations (a conv encoder); for 1-d observations DI-engine ignores
        # encoder_hidden_size_list and refuses share_encoder=True, and so does ding
        if share_encoder:
            raise ValueError("ContinuousQAC: share_encoder=True is DI-engine's option for image observations, which "
                             "ding's ContinuousQAC (1-d observations) does not take; leave it False")
        obs = as_shape(obs_shape, "ContinuousQAC obs_shape")
        act = as_shape(action_shape, "ContinuousQAC action_shape")
        if len(obs) != 1 or len(act) != 1:
            raise ValueError(f"ContinuousQAC: obs_shape {obs} and action_shape {act} must be 1-d")
        self.obs_shape, self.action_shape = obs, act[0]
        self.action_space = action_space
        self.twin_critic = twin_critic
        actor_in = mlp(obs[0], [actor_head_hidden_size], activation, norm_type)
        if action_space == "regression":
            head: nn.Module = RegressionHead(actor_head_hidden_size, self.action_shape, actor_head_layer_num,
                                             final_tanh=True, activation=activation, norm_type=norm_type)
        else:
            head = ReparameterizationHead(actor_head_hidden_size, self.action_shape, actor_head_layer_num,
                                          sigma_type="conditioned", activation=activation, norm_type=norm_type)
        self.actor = nn.Sequential(actor_in, head)
        n_critics = 2 if twin_critic else 1
        self.critic = nn.ModuleList(
            nn.Sequential(mlp(obs[0] + self.action_shape, [critic_head_hidden_size], activation, norm_type),
                          RegressionHead(critic_head_hidden_size, 1, critic_head_layer_num, activation=activation,
                                         norm_type=norm_type))
            for _ in range(n_critics)
        )

    def forward(self, inputs: Any, mode: str) -> dict[str, Any]:
        if mode not in MODES:
            raise ValueError(f"ContinuousQAC.forward: unknown mode {mode!r}; use one of {MODES}")
        return getattr(self, mode)(inputs)

    def compute_actor(self, obs: torch.Tensor) -> dict[str, Any]:
        out = self.actor(obs)
        if self.action_space == "regression":
            return {"action": out["pred"]}
        return {"logit": [out["mu"], out["sigma"]]}

    def compute_critic(self, inputs: Mapping[str, torch.Tensor]) -> dict[str, Any]:
        action = inputs["action"]
        if action.dim() == 1:
            action = action.unsqueeze(-1)
        x = torch.cat([inputs["obs"], action], dim=-1)
        q = [critic(x)["pred"] for critic in self.critic]
        return {"q_value": q if self.twin_critic else q[0]}
