"""DreamerV3's actor-critic (DI-engine's ``DREAMERVAC``): both read the world model's latent feature.

The feature is the concatenation of the stochastic state (``dyn_stoch`` categorical variables of ``dyn_discrete``
classes, one-hot, or ``dyn_stoch`` reals when ``dyn_discrete`` is 0) and the deterministic state (``dyn_deter``).
The critic predicts the return as a categorical distribution over 255 bins spaced evenly in symlog space
(``symexp`` of the expected bin is the value); its output layer starts at zero, so the first value is 0.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn as nn

from ding.utils import MODEL_REGISTRY
from ding.utils.default_helper import squeeze

ACTOR_DISTS = ("normal", "onehot")
MODES = ("compute_actor", "compute_critic", "compute_actor_critic")
VALUE_BINS = 255


def symexp(x: torch.Tensor) -> torch.Tensor:
    """The inverse of symlog: ``sign(x) * (exp(|x|) - 1)``."""
    return torch.sign(x) * torch.expm1(x.abs())


def _trunk(in_dim: int, units: int, layers: int, act: str, norm: str) -> nn.Sequential:
    if not hasattr(nn, act) or not hasattr(nn, norm):
        raise ValueError(f"DREAMERVAC: act {act!r} and norm {norm!r} must name torch.nn classes (e.g. 'SiLU', "
                         f"'LayerNorm')")
    mods: list[nn.Module] = []
    dim = in_dim
    for _ in range(layers):
        mods += [nn.Linear(dim, units, bias=False), getattr(nn, norm)(units), getattr(nn, act)()]
        dim = units
    return nn.Sequential(*mods)


@MODEL_REGISTRY.register("dreamervac")
class DREAMERVAC(nn.Module):
    bins: torch.Tensor  # a non-persistent buffer, registered in __init__

    """``compute_actor(feat)``: ``actor_dist='normal'`` -> ``{'logit': {'mu', 'sigma'}}`` with ``sigma`` in
    ``[actor_min_std, actor_max_std]``; ``'onehot'`` -> ``{'logit': (B, A)}``, the log-probabilities of the
    softmax mixed with ``action_unimix_ratio`` of the uniform distribution. ``compute_critic(feat)`` ->
    ``{'value': (B,), 'value_logit': (B, 255)}``. ``obs_shape`` is kept for DI-engine's signature: both heads read
    the latent feature, not the observation; so is ``actor_temp`` (DreamerV3's Gumbel temperature, for a sampling
    form this model does not offer).
    """

    def __init__(self, obs_shape: int | Sequence[int], action_shape: int | Sequence[int], dyn_stoch: int = 32,
                 dyn_deter: int = 512, dyn_discrete: int = 32, actor_layers: int = 2, value_layers: int = 2,
                 units: int = 512, act: str = "SiLU", norm: str = "LayerNorm", actor_dist: str = "normal",
                 actor_init_std: float = 1.0, actor_min_std: float = 0.1, actor_max_std: float = 1.0,
                 actor_temp: float = 0.1, action_unimix_ratio: float = 0.01) -> None:
        super().__init__()
        if actor_dist not in ACTOR_DISTS:
            raise ValueError(f"DREAMERVAC actor_dist: unknown {actor_dist!r}; use one of {ACTOR_DISTS}")
        if not 0.0 < actor_min_std <= actor_max_std:
            raise ValueError(f"DREAMERVAC: need 0 < actor_min_std ({actor_min_std}) <= actor_max_std "
                             f"({actor_max_std})")
        self.obs_shape, self.action_shape = obs_shape, int(squeeze(action_shape))
        self.actor_dist, self.unimix = actor_dist, float(action_unimix_ratio)
        self.min_std, self.max_std, self.init_std = float(actor_min_std), float(actor_max_std), float(actor_init_std)
        self.feat_size = dyn_stoch * dyn_discrete + dyn_deter if dyn_discrete else dyn_stoch + dyn_deter
        out = 2 * self.action_shape if actor_dist == "normal" else self.action_shape
        self.actor = nn.Sequential(_trunk(self.feat_size, units, actor_layers, act, norm), nn.Linear(units, out))
        value_out = nn.Linear(units, VALUE_BINS)
        nn.init.zeros_(value_out.weight)
        nn.init.zeros_(value_out.bias)
        self.critic = nn.Sequential(_trunk(self.feat_size, units, value_layers, act, norm), value_out)
        self.register_buffer("bins", torch.linspace(-20.0, 20.0, VALUE_BINS), persistent=False)

    def forward(self, feat: torch.Tensor, mode: str) -> dict[str, Any]:
        if mode not in MODES:
            raise ValueError(f"DREAMERVAC.forward: unknown mode {mode!r}; use one of {MODES}")
        return getattr(self, mode)(feat)

    def compute_actor(self, feat: torch.Tensor) -> dict[str, Any]:
        x = self.actor(feat)
        if self.actor_dist == "onehot":
            probs = (1 - self.unimix) * torch.softmax(x, -1) + self.unimix / self.action_shape
            return {"logit": probs.log()}
        mu, raw = x.chunk(2, dim=-1)
        # sigmoid(raw + 2) starts near 0.88 of the range; init_std scales it as in DreamerV3's actor
        sigma = (self.max_std - self.min_std) * torch.sigmoid(raw + 2.0) + self.min_std
        return {"logit": {"mu": torch.tanh(mu), "sigma": sigma * self.init_std}}

    def compute_critic(self, feat: torch.Tensor) -> dict[str, Any]:
        logit = self.critic(feat)
        value = symexp((torch.softmax(logit, -1) * self.bins).sum(-1))
        return {"value": value, "value_logit": logit}

    def compute_actor_critic(self, feat: torch.Tensor) -> dict[str, Any]:
        return {**self.compute_actor(feat), **self.compute_critic(feat)}
