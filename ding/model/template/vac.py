"""Actor-critic model (PPO / A2C): a policy head and a state-value head, optionally over a shared encoder."""
from __future__ import annotations

import copy
import functools
from collections.abc import Mapping
from typing import Any, Sequence

import torch
import torch.nn as nn

from ding.config.ranges import at_least, greater_than, one_of, shape, sizes
from ding.utils import MODEL_REGISTRY

from ..common import (
    ConvEncoder,
    DiscreteHead,
    FCEncoder,
    IMPALAConvEncoder,
    RegressionHead,
    ReparameterizationHead,
    discrete_head,
)
from ..common.head import SIGMA_TYPES
from ..common.nn_module import NORM_TYPES
from .q_learning import as_shape, build_encoder

ACTION_SPACES = ("discrete", "continuous", "hybrid")
MODES = ("compute_actor", "compute_critic", "compute_actor_critic")


@MODEL_REGISTRY.register("vac")
class VAC(nn.Module):
    """``forward(obs, mode)`` with mode ``'compute_actor'`` -> ``{'logit'}``, ``'compute_critic'`` -> ``{'value'}``
    (B,), ``'compute_actor_critic'`` -> both.

    Discrete: ``logit`` is (B, n_actions), or for a multi-discrete ``action_shape`` such as ``[2, 3, 6]`` a list
    with one (B, n) entry per action dimension (``multi_head`` is then True). Continuous: ``logit`` is
    ``{'mu', 'sigma'}`` of a diagonal Gaussian. Hybrid (DI-engine's parameterised actions): ``action_shape`` is
    ``{'action_type_shape': n, 'action_args_shape': d}`` and ``logit`` is ``{'action_type': (B, n), 'action_args':
    {'mu', 'sigma'} (B, d)}``.
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
        action_shape: int | Sequence[int] | Mapping[str, Any],
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
        impala_cnn_encoder: bool = False,
    ) -> None:
        """``encoder``: DI-engine's option, a module of the user's own used as the shared encoder (without
        ``share_encoder``: the actor's, the critic getting a copy); its output size is its ``output_size`` attribute,
        else ``encoder_hidden_size_list[-1]``. ``impala_cnn_encoder=True`` (DI-engine's option, image observations)
        builds :class:`IMPALAConvEncoder` s instead of the default encoders: ``encoder_hidden_size_list`` gives
        their stacks' channels and its last entry their output size (unset: the encoder's defaults)."""
        super().__init__()
        if action_space not in ACTION_SPACES:
            raise ValueError(f"VAC action_space: unknown {action_space!r}; use one of {ACTION_SPACES}")
        self.obs_shape = as_shape(obs_shape, "VAC obs_shape")
        self.action_space = action_space
        self.share_encoder = bool(share_encoder)
        if encoder is not None:
            feat = getattr(encoder, "output_size", None) or (list(encoder_hidden_size_list)[-1]
                                                           if encoder_hidden_size_list else None)
            if not isinstance(feat, int):
                raise ValueError("VAC: the encoder's output size is unknown; give it an output_size attribute or "
                                 "set encoder_hidden_size_list (its last entry is the size)")
            # not shared: the critic gets its own copy of the user's encoder (separate weights), as in DI-engine
            self.actor_encoder = encoder
            self.critic_encoder = encoder if self.share_encoder else copy.deepcopy(encoder)
        else:
            def new_encoder() -> ConvEncoder | FCEncoder | IMPALAConvEncoder:
                if not impala_cnn_encoder:
                    return build_encoder(self.obs_shape, encoder_hidden_size_list, activation, norm_type)
                if len(self.obs_shape) != 3:
                    raise ValueError(f"VAC impala_cnn_encoder=True needs image observations (C, H, W), got obs_shape "
                                     f"{tuple(self.obs_shape)}")
                if not encoder_hidden_size_list:
                    return IMPALAConvEncoder(self.obs_shape)
                sizes = [int(n) for n in encoder_hidden_size_list]
                return IMPALAConvEncoder(self.obs_shape, channels=sizes, outsize=sizes[-1])

            self.actor_encoder = new_encoder()
            self.critic_encoder = self.actor_encoder if self.share_encoder else new_encoder()
            feat = self.actor_encoder.output_size
        make_head = functools.partial(_actor_head, hidden=actor_head_hidden_size, layers=actor_head_layer_num,
                                      feat=feat, activation=activation, norm_type=norm_type, sigma_type=sigma_type,
                                      fixed_sigma_value=fixed_sigma_value, bound_type=bound_type)
        self.multi_head = False
        if action_space == "hybrid":
            if not isinstance(action_shape, Mapping) or not {"action_type_shape", "action_args_shape"} <= set(
                    action_shape):
                raise ValueError(f"VAC action_shape {action_shape!r}: a hybrid action space needs a dict with "
                                 f"'action_type_shape' and 'action_args_shape'")
            self.action_shape: Any = action_shape
            type_dim = as_shape(action_shape["action_type_shape"], "VAC action_type_shape")
            args_dim = as_shape(action_shape["action_args_shape"], "VAC action_args_shape")
            self.actor_head: nn.Module = nn.ModuleList([make_head("discrete", type_dim),
                                                        make_head("continuous", args_dim)])
        else:
            action_dim = as_shape(action_shape, "VAC action_shape")  # type: ignore[arg-type]  # a Mapping: refused
            if len(action_dim) != 1 and action_space == "continuous":
                raise ValueError(f"VAC action_shape {action_dim}: a continuous action is one int (its dimension)")
            self.action_shape = action_dim[0] if len(action_dim) == 1 else action_dim
            self.multi_head = len(action_dim) > 1
            self.actor_head = make_head(action_space, action_dim)
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
        if self.action_space == "hybrid":
            type_head, args_head = self.actor_head.children()
            args = args_head(feat)
            return {"action_type": type_head(feat)["logit"], "action_args": {"mu": args["mu"], "sigma": args["sigma"]}}
        out = self.actor_head(feat)
        return out["logit"] if self.action_space == "discrete" else {"mu": out["mu"], "sigma": out["sigma"]}


def _actor_head(space: str, action_dim: tuple[int, ...], hidden: int, layers: int, feat: int,
                activation: nn.Module | None, norm_type: str | None, sigma_type: str, fixed_sigma_value: float,
                bound_type: str | None) -> nn.Module:
    """A discrete head (a :class:`~ding.model.common.MultiHead` for several action dimensions) or a Gaussian one."""
    if space == "discrete":
        return discrete_head(DiscreteHead, hidden, action_dim, layer_num=layers, activation=activation,
                             norm_type=norm_type, input_size=feat)
    # with no hidden layer (layers=0) mu and sigma read the encoder's features directly
    return ReparameterizationHead(hidden if layers > 0 else feat, action_dim[0], layers, sigma_type,
                                  fixed_sigma_value, activation, norm_type, bound_type, input_size=feat)
