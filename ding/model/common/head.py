"""Output heads: discrete Q/logits, dueling Q, distributional (C51 / Rainbow) Q, regression, and reparameterised
Gaussian."""
from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn as nn

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
            self.register_buffer("log_sigma", torch.full((1, output_size), float(fixed_sigma_value)).log())
        elif sigma_type == "independent":
            self.log_sigma = nn.Parameter(torch.zeros(1, output_size))
        else:
            self.log_sigma_layer = nn.Linear(hidden_size, output_size)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        h = self.main(x)
        mu = self.mu(h)
        if self.bound_type == "tanh":
            mu = torch.tanh(mu)
        if self.sigma_type == "conditioned":
            log_sigma = self.log_sigma_layer(h).clamp(self.LOG_SIGMA_MIN, self.LOG_SIGMA_MAX)
        else:
            log_sigma = self.log_sigma.expand_as(mu)
        return {"mu": mu, "sigma": log_sigma.exp()}


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
