"""Actor-critic model (PPO / A2C): a policy head and a state-value head, optionally over a shared encoder."""
from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn as nn

from ding.config.ranges import at_least, greater_than, one_of, shape, sizes
from ding.utils import MODEL_REGISTRY

from ..common import DiscreteHead, RegressionHead, ReparameterizationHead
from ..common.head import SIGMA_TYPES
from ..common.nn_module import NORM_TYPES
from .q_learning import as_shape, build_encoder

ACTION_SPACES = ("discrete", "continuous")
MODES = ("compute_actor", "compute_critic", "compute_actor_critic")


@MODEL_REGISTRY.register("vac")
class VAC(nn.Module):
    """``forward(obs, mode)`` with mode ``'compute_actor'`` -> ``{'logit'}``, ``'compute_critic'`` -> ``{'value'}``
    (B,), ``'compute_actor_critic'`` -> both.

    Discrete: ``logit`` is (B, n_actions). Continuous: ``logit`` is ``{'mu', 'sigma'}`` of a diagonal Gaussian.
    """

    # Allowed values of the keyword arguments (policy.model.*), checked by create_model (ding/config/ranges.py).
    config_ranges = {
        "obs_shape": shape(),
        "action_shape": shape(),
        "action_space": one_of(*ACTION_SPACES),
        "encoder_hidden_size_list": sizes(),
        "actor_head_hidden_size": at_least(1, integer=True),
        "actor_head_layer_num": at_least(0, integer=True),
        "critic_head_hidden_size": at_least(1, integer=True),
        "critic_head_layer_num": at_least(0, integer=True),
        "norm_type": one_of(*NORM_TYPES),
        "sigma_type": one_of(*SIGMA_TYPES),
        "fixed_sigma_value": greater_than(0),
        "bound_type": one_of("tanh"),
    }

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int | Sequence[int],
        action_space: str = "discrete",
        share_encoder: bool = True,
        encoder_hidden_size_list: Sequence[int] | None = None,
        actor_head_hidden_size: int = 64,
        actor_head_layer_num: int = 1,
        critic_head_hidden_size: int = 64,
        critic_head_layer_num: int = 1,
        activation: nn.Module | None = None,
        norm_type: str | None = None,
        sigma_type: str = "independent",
        fixed_sigma_value: float = 0.3,
        bound_type: str | None = None,
    ) -> None:
        super().__init__()
        if action_space not in ACTION_SPACES:
            raise ValueError(f"VAC action_space: unknown {action_space!r}; use one of {ACTION_SPACES}")
        self.obs_shape = as_shape(obs_shape, "VAC obs_shape")
        action_dim = as_shape(action_shape, "VAC action_shape")
        if len(action_dim) != 1:
            raise ValueError(f"VAC action_shape {action_dim}: use an int (n actions or action dimension)")
        self.action_space = action_space
        self.share_encoder = share_encoder
        self.actor_encoder = build_encoder(self.obs_shape, encoder_hidden_size_list, activation, norm_type)
        self.critic_encoder = (self.actor_encoder if share_encoder else
                               build_encoder(self.obs_shape, encoder_hidden_size_list, activation, norm_type))
        feat = self.actor_encoder.output_size
        if action_space == "discrete":
            self.actor_head: nn.Module = DiscreteHead(actor_head_hidden_size, action_dim[0], actor_head_layer_num,
                                                      activation, norm_type, input_size=feat)
        else:
            # with no hidden layer (actor_head_layer_num=0) mu and sigma read the encoder's features directly
            hidden = actor_head_hidden_size if actor_head_layer_num > 0 else feat
            self.actor_head = ReparameterizationHead(hidden, action_dim[0], actor_head_layer_num, sigma_type,
                                                     fixed_sigma_value, activation, norm_type, bound_type,
                                                     input_size=feat)
        self.critic_head = RegressionHead(critic_head_hidden_size, 1, critic_head_layer_num, activation=activation,
                                          norm_type=norm_type, input_size=feat)

    def forward(self, x: torch.Tensor, mode: str) -> dict[str, Any]:
        if mode not in MODES:
            raise ValueError(f"VAC.forward: unknown mode {mode!r}; use one of {MODES}")
        return getattr(self, mode)(x)

    def compute_actor(self, x: torch.Tensor) -> dict[str, Any]:
        return {"logit": self._actor_logit(self.actor_encoder(x))}

    def compute_critic(self, x: torch.Tensor) -> dict[str, Any]:
        return {"value": self.critic_head(self.critic_encoder(x))["pred"]}

    def compute_actor_critic(self, x: torch.Tensor) -> dict[str, Any]:
        actor_feat = self.actor_encoder(x)
        critic_feat = actor_feat if self.share_encoder else self.critic_encoder(x)
        return {"logit": self._actor_logit(actor_feat), "value": self.critic_head(critic_feat)["pred"]}

    def _actor_logit(self, feat: torch.Tensor) -> Any:
        out = self.actor_head(feat)
        return out["logit"] if self.action_space == "discrete" else {"mu": out["mu"], "sigma": out["sigma"]}
