"""Output heads: discrete Q/logits, dueling Q, distributional (C51 / Rainbow) Q, regression, reparameterised
Gaussian, ACER's stochastic dueling Q for continuous actions, and an ensemble of regression heads."""
from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn as nn
from torch.distributions import Independent, Normal

from .nn_module import NoisyLinear, mlp


class DiscreteHead(nn.Module):
    """``layer_num`` hidden layers of ``hidden_size``, then a Linear to ``output_size`` -> ``{'logit': (B, A)}``."""

    def __init__(
        self,
        hidden_size: int,
        output_size: int,
        layer_num: int = 1,
        activation: nn.Module | None = None,
        norm_type: str | None = None,
        input_size: int | None = None,
    ) -> None:
        super().__init__()
        self.Q = mlp(input_size or hidden_size, [hidden_size] * layer_num, activation, norm_type, out_dim=output_size)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"logit": self.Q(x)}


class DuelingHead(nn.Module):
    """Dueling Q head: ``Q = V + A - mean(A)`` from separate value and advantage streams -> ``{'logit': (B, A)}``."""

    def __init__(
        self,
        hidden_size: int,
        output_size: int,
        layer_num: int = 1,
        a_layer_num: int | None = None,
        v_layer_num: int | None = None,
        activation: nn.Module | None = None,
        norm_type: str | None = None,
        input_size: int | None = None,
    ) -> None:
        super().__init__()
        in_dim = input_size or hidden_size
        a_layers = layer_num if a_layer_num is None else a_layer_num
        v_layers = layer_num if v_layer_num is None else v_layer_num
        self.A = mlp(in_dim, [hidden_size] * a_layers, activation, norm_type, out_dim=output_size)
        self.V = mlp(in_dim, [hidden_size] * v_layers, activation, norm_type, out_dim=1)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        advantage = self.A(x)
        value = self.V(x)
        return {"logit": value + advantage - advantage.mean(dim=-1, keepdim=True)}


class DistributionHead(nn.Module):
    """Categorical return distribution per action on the support ``linspace(v_min, v_max, n_atom)`` (C51).

    Returns ``{'logit': (B, A) expected Q, 'distribution': (B, A, n_atom) probabilities, 'log_distribution': their
    logs}``. ``dueling`` splits value and advantage streams (``V + A - mean(A)`` on the atom logits); ``noise`` builds
    every linear layer as a :class:`NoisyLinear`.
    """

    support: torch.Tensor  # a non-persistent buffer, registered in __init__

    def __init__(
        self,
        hidden_size: int,
        output_size: int,
        layer_num: int = 1,
        n_atom: int = 51,
        v_min: float = -10.0,
        v_max: float = 10.0,
        noise: bool = False,
        dueling: bool = False,
        activation: nn.Module | None = None,
        norm_type: str | None = None,
        input_size: int | None = None,
    ) -> None:
        super().__init__()
        if not v_min < v_max:
            raise ValueError(f"{type(self).__name__}: v_min ({v_min}) must be below v_max ({v_max})")
        if n_atom < 2:
            raise ValueError(f"{type(self).__name__}: n_atom must be >= 2, got {n_atom}")
        in_dim = input_size or hidden_size
        linear = NoisyLinear if noise else nn.Linear
        self.output_size, self.n_atom, self.dueling = output_size, n_atom, dueling
        self.A = mlp(in_dim, [hidden_size] * layer_num, activation, norm_type, out_dim=output_size * n_atom,
                     linear=linear)
        if dueling:
            self.V = mlp(in_dim, [hidden_size] * layer_num, activation, norm_type, out_dim=n_atom, linear=linear)
        self.register_buffer("support", torch.linspace(float(v_min), float(v_max), n_atom), persistent=False)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        logits = self.A(x).view(*x.shape[:-1], self.output_size, self.n_atom)
        if self.dueling:
            logits = self.V(x).unsqueeze(-2) + logits - logits.mean(dim=-2, keepdim=True)
        log_dist = torch.log_softmax(logits, dim=-1)
        dist = log_dist.exp()
        return {"logit": (dist * self.support).sum(-1), "distribution": dist, "log_distribution": log_dist}


class RainbowHead(DistributionHead):
    """:class:`DistributionHead` with Rainbow's defaults: dueling streams of noisy linear layers."""

    def __init__(self, hidden_size: int, output_size: int, layer_num: int = 1, n_atom: int = 51,
                 v_min: float = -10.0, v_max: float = 10.0, noise: bool = True, dueling: bool = True,
                 activation: nn.Module | None = None, norm_type: str | None = None,
                 input_size: int | None = None) -> None:
        super().__init__(hidden_size, output_size, layer_num, n_atom, v_min, v_max, noise, dueling, activation,
                         norm_type, input_size)


class RegressionHead(nn.Module):
    """Real-valued output ``{'pred': (B, output_size)}`` (squeezed to (B,) when ``output_size == 1``); with
    ``final_tanh`` the output lies in (-1, 1) (deterministic continuous actions)."""

    def __init__(
        self,
        hidden_size: int,
        output_size: int,
        layer_num: int = 2,
        final_tanh: bool = False,
        activation: nn.Module | None = None,
        norm_type: str | None = None,
        input_size: int | None = None,
    ) -> None:
        super().__init__()
        self.main = mlp(input_size or hidden_size, [hidden_size] * layer_num, activation, norm_type,
                        out_dim=output_size)
        self.final_tanh = final_tanh
        self.output_size = output_size

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        pred = self.main(x)
        if self.final_tanh:
            pred = torch.tanh(pred)
        if self.output_size == 1:
            pred = pred.squeeze(-1)
        return {"pred": pred}


SIGMA_TYPES = ("fixed", "independent", "conditioned")


class ReparameterizationHead(nn.Module):
    """Diagonal Gaussian parameters ``{'mu', 'sigma'}`` of shape (B, output_size).

    ``sigma_type``: ``'fixed'`` (constant ``fixed_sigma_value``), ``'independent'`` (a learned state-independent
    log-sigma) or ``'conditioned'`` (a second output of the network, clamped log-sigma). ``bound_type='tanh'``
    squashes ``mu`` into (-1, 1).
    """

    LOG_SIGMA_MIN, LOG_SIGMA_MAX = -20.0, 2.0

    def __init__(
        self,
        hidden_size: int,
        output_size: int,
        layer_num: int = 2,
        sigma_type: str = "conditioned",
        fixed_sigma_value: float = 1.0,
        activation: nn.Module | None = None,
        norm_type: str | None = None,
        bound_type: str | None = None,
        input_size: int | None = None,
    ) -> None:
        super().__init__()
        if sigma_type not in SIGMA_TYPES:
            raise ValueError(f"ReparameterizationHead: unknown sigma_type {sigma_type!r}; use one of {SIGMA_TYPES}")
        if bound_type not in (None, "tanh"):
            raise ValueError(f"ReparameterizationHead: unknown bound_type {bound_type!r}; use None or 'tanh'")
        self.sigma_type = sigma_type
        self.bound_type = bound_type
        self.main = mlp(input_size or hidden_size, [hidden_size] * layer_num, activation, norm_type)
        self.mu = nn.Linear(hidden_size, output_size)
        if sigma_type == "fixed":
            # forward returns the value itself (exp(log(0.3)) is not 0.3 in float32); the buffer keeps the
            # state-dict layout of earlier checkpoints
            self.fixed_sigma_value = float(fixed_sigma_value)
            self.register_buffer("log_sigma", torch.full((1, output_size), self.fixed_sigma_value).log())
        elif sigma_type == "independent":
            self.log_sigma = nn.Parameter(torch.zeros(1, output_size))
        else:
            self.log_sigma_layer = nn.Linear(hidden_size, output_size)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        h = self.main(x)
        mu = self.mu(h)
        if self.bound_type == "tanh":
            mu = torch.tanh(mu)
        if self.sigma_type == "fixed":
            return {"mu": mu, "sigma": torch.full_like(mu, self.fixed_sigma_value)}
        if self.sigma_type == "conditioned":
            log_sigma = self.log_sigma_layer(h).clamp(self.LOG_SIGMA_MIN, self.LOG_SIGMA_MAX)
        else:
            log_sigma = self.log_sigma.expand_as(mu)
        return {"mu": mu, "sigma": log_sigma.exp()}

    @property
    def log_sigma_param(self) -> nn.Parameter:
        """DI-engine's name of the learned log-sigma of ``sigma_type='independent'``."""
        if self.sigma_type != "independent":
            raise AttributeError(f"log_sigma_param: only sigma_type='independent' learns a log-sigma parameter "
                                 f"(this head's sigma_type is {self.sigma_type!r})")
        return self.log_sigma


class StochasticDuelingHead(nn.Module):
    """ACER's stochastic dueling network (Wang et al. 2016) for continuous actions: ``{'q_value', 'v_value'}``, both
    (B, 1), for a state embedding ``s`` (B, hidden_size) and its behaviour action ``a`` (B, action_shape).

    ``Q(s, a) = V(s) + A(s, a) - mean_i A(s, a_i)`` over ``sample_size`` actions ``a_i`` drawn (reparameterised, so
    gradients reach ``mu`` and ``sigma``) from the policy's Gaussian ``N(mu, sigma)``, squashed by tanh when
    ``last_tanh``. ``noise=True`` builds the layers as :class:`NoisyLinear`.
    """

    def __init__(
        self,
        hidden_size: int,
        action_shape: int,
        layer_num: int = 1,
        a_layer_num: int | None = None,
        v_layer_num: int | None = None,
        activation: nn.Module | None = None,
        norm_type: str | None = None,
        noise: bool = False,
        last_tanh: bool = True,
    ) -> None:
        super().__init__()
        a_layers = layer_num if a_layer_num is None else a_layer_num
        v_layers = layer_num if v_layer_num is None else v_layer_num
        linear = NoisyLinear if noise else nn.Linear
        self.A = mlp(hidden_size + action_shape, [hidden_size] * a_layers, activation, norm_type, out_dim=1,
                     linear=linear)
        self.V = mlp(hidden_size, [hidden_size] * v_layers, activation, norm_type, out_dim=1, linear=linear)
        self.last_tanh = last_tanh

    def forward(self, s: torch.Tensor, a: torch.Tensor, mu: torch.Tensor, sigma: torch.Tensor,
                sample_size: int = 10) -> dict[str, torch.Tensor]:
        advantage = self.A(torch.cat([s, a], dim=-1))  # (B, 1)
        value = self.V(s)  # (B, 1)
        sampled = Independent(Normal(mu, sigma), 1).rsample((sample_size, )).transpose(0, 1)  # (B, n, A)
        if self.last_tanh:
            sampled = torch.tanh(sampled)
        states = s.unsqueeze(1).expand(-1, sample_size, -1)  # (B, n, hidden)
        sampled_advantage = self.A(torch.cat([states, sampled], dim=-1))  # (B, n, 1)
        return {"q_value": value + advantage - sampled_advantage.mean(dim=1), "v_value": value}


class EnsembleHead(nn.Module):
    """``ensemble_num`` independent MLP heads evaluated in one pass (grouped 1x1 convolutions): an input of shape
    (B, input_size * ensemble_num, 1), member ``k``'s features at ``[k * input_size, (k + 1) * input_size)``, gives
    ``{'pred': (B, output_size * ensemble_num)}``, member ``k``'s outputs likewise in its own slice."""

    def __init__(self, input_size: int, output_size: int, hidden_size: int, layer_num: int, ensemble_num: int,
                 activation: nn.Module | None = None, norm_type: str | None = None) -> None:
        super().__init__()
        if ensemble_num < 1 or layer_num < 0:
            raise ValueError(f"EnsembleHead: needs ensemble_num >= 1 and layer_num >= 0, got {ensemble_num} and "
                             f"{layer_num}")
        if norm_type not in (None, "BN"):
            raise ValueError(f"EnsembleHead: norm_type {norm_type!r} is not supported; use None or 'BN'")
        act = activation if activation is not None else nn.ReLU()
        layers: list[nn.Module] = []
        width = input_size
        for _ in range(layer_num):
            layers.append(nn.Conv1d(width * ensemble_num, hidden_size * ensemble_num, 1, groups=ensemble_num))
            if norm_type == "BN":
                layers.append(nn.BatchNorm1d(hidden_size * ensemble_num))
            layers.append(act)
            width = hidden_size
        # no activation on the output layer
        layers.append(nn.Conv1d(width * ensemble_num, output_size * ensemble_num, 1, groups=ensemble_num))
        self.pred = nn.Sequential(*layers)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return {"pred": self.pred(x).squeeze(-1)}


class MultiHead(nn.Module):
    """One head per action dimension of a multi-discrete action space (``output_size_list``, e.g. ``[2, 3, 6]``).

    ``MultiHead(DiscreteHead, hidden_size, [2, 3, 6], **head_kwargs)`` builds ``head_cls(hidden_size, n,
    **head_kwargs)`` for each ``n``; ``forward(x)`` returns the heads' dicts merged key by key into lists, e.g.
    ``{'logit': [(B, 2), (B, 3), (B, 6)]}``.
    """

    def __init__(self, head_cls: type[nn.Module], hidden_size: int, output_size_list: Sequence[int],
                 **head_kwargs: Any) -> None:
        super().__init__()
        sizes = [int(n) for n in output_size_list]
        if not sizes or any(n < 1 for n in sizes):
            raise ValueError(f"MultiHead: output_size_list must be a non-empty list of positive ints, got "
                             f"{list(output_size_list)}")
        self.output_size_list = sizes
        self.pred = nn.ModuleList([head_cls(hidden_size, n, **head_kwargs) for n in sizes])

    def forward(self, x: torch.Tensor) -> dict[str, list[Any]]:
        merged: dict[str, list[Any]] = {}
        for head in self.pred:
            for key, value in head(x).items():
                merged.setdefault(key, []).append(value)
        return merged


def discrete_head(head_cls: type[nn.Module], hidden_size: int, action_shape: Sequence[int],
                  **head_kwargs: Any) -> nn.Module:
    """``head_cls`` for a single discrete action dimension (``action_shape`` of length 1), a :class:`MultiHead` of
    them for a multi-discrete one (DI-engine's list ``action_shape``)."""
    if len(action_shape) == 1:
        return head_cls(hidden_size, int(action_shape[0]), **head_kwargs)
    return MultiHead(head_cls, hidden_size, action_shape, **head_kwargs)
