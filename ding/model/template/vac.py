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
        encoder: nn.Module | None = None,
    ) -> None:
        """``encoder``: DI-engine's option, a module of the user's own used as the shared encoder (needs
        ``share_encoder``); its output size is its ``output_size`` attribute, else ``encoder_hidden_size_list[-1]``."""
        super().__init__()
        if action_space not in ACTION_SPACES:
            raise ValueError(f"VAC action_space: unknown {action_space!r}; use one of {ACTION_SPACES}")
        self.obs_shape = as_shape(obs_shape, "VAC obs_shape")
        action_dim = as_shape(action_shape, "VAC action_shape")
        if len(action_dim) != 1:
            raise ValueError(f"VAC action_shape {action_dim}: use an int (n actions or action dimension)")
        self.action_space = action_space
        self.share_encoder = share_encoder
        if encoder is not None:
            if not share_encoder:
                raise ValueError("VAC: a given encoder is shared by actor and critic; set share_encoder=True")
            feat = getattr(encoder, "output_size", None) or (list(encoder_hidden_size_list)[-1]
                                                           if encoder_hidden_size_list else None)
            if not isinstance(feat, int):
                raise ValueError("VAC: the encoder's output size is unknown; give it an output_size attribute or "
                                 "set encoder_hidden_size_list (its last entry is the size)")
            self.actor_encoder = self.critic_encoder = encoder
        else:
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

    @property
    def actor(self) -> nn.ModuleList:
        """DI-engine's ``model.actor``: the actor's encoder and head (e.g. ``model.actor.parameters()`` for its own
        optimizer); a view, not a registered submodule, so the state dict keeps its keys."""
        return nn.ModuleList([self.actor_encoder, self.actor_head])

    @property
    def critic(self) -> nn.ModuleList:
        """DI-engine's ``model.critic``: the critic's encoder and head (see :attr:`actor`)."""
        return nn.ModuleList([self.critic_encoder, self.critic_head])

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
