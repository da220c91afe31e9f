"""Heads of the quantile Q-networks: fixed quantiles (QR-DQN), sampled quantiles (IQN) and proposed fractions (FQF).

Each maps a feature ``x`` (B, hidden) to a dict whose ``logit`` (B, A) is the mean return per action (what acting
takes the argmax of) and whose other entries are the return quantiles the TD losses fit.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn

from .nn_module import mlp


class QRDQNHead(nn.Module):
    """``num_quantiles`` fixed quantiles per action at the midpoints ``(i + 0.5) / N``:
    ``{'logit': (B, A), 'q': (B, A, N), 'tau': (B, N, 1)}``."""

    tau: torch.Tensor  # a non-persistent buffer, registered in __init__

    def __init__(self, hidden_size: int, output_size: int, layer_num: int = 1, num_quantiles: int = 32,
                 activation: nn.Module | None = None, norm_type: str | None = None,
                 input_size: int | None = None) -> None:
        super().__init__()
        self.output_size, self.num_quantiles = int(output_size), int(num_quantiles)
        if self.num_quantiles < 1:
            raise ValueError(f"QRDQNHead: num_quantiles must be >= 1, got {num_quantiles}")
        self.Q = mlp(input_size or hidden_size, [hidden_size] * layer_num, activation, norm_type,
                     out_dim=self.output_size * self.num_quantiles)
        self.register_buffer("tau", (torch.arange(self.num_quantiles) + 0.5) / self.num_quantiles, persistent=False)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        q = self.Q(x).view(x.shape[0], self.output_size, self.num_quantiles)
        tau = self.tau.view(1, -1, 1).expand(x.shape[0], -1, -1)
        return {"logit": q.mean(-1), "q": q, "tau": tau}


class CosineQuantileEmbedding(nn.Module):
    """A quantile fraction ``tau`` in [0, 1] -> ``ReLU(Linear(cos(pi * i * tau) for i in 0..size-1))``, the
    embedding IQN and FQF multiply the state feature by."""

    freq: torch.Tensor  # a non-persistent buffer, registered in __init__

    def __init__(self, size: int, out_dim: int) -> None:
        super().__init__()
        self.register_buffer("freq", torch.arange(int(size)).float() * math.pi, persistent=False)
        self.fc = nn.Sequential(nn.Linear(int(size), out_dim), nn.ReLU())

    def forward(self, tau: torch.Tensor) -> torch.Tensor:
        """``tau`` (..., 1) -> (..., out_dim)."""
        return self.fc(torch.cos(tau * self.freq))


class QuantileHead(nn.Module):
    """IQN's head: ``num_quantiles`` fractions drawn uniformly per sample at every call, each embedded and mixed with
    the feature, then an MLP to one return quantile per action.

    ``{'logit': (B, A) mean over the draws, 'q': (N, B, A), 'quantiles': (N * B, 1) the fractions drawn}`` (the
    ``q`` rows are fraction-major: row ``n * B + b`` of ``quantiles`` belongs to ``q[n, b]``).
    """

    def __init__(self, hidden_size: int, output_size: int, layer_num: int = 1, num_quantiles: int = 32,
                 quantile_embedding_size: int = 128, activation: nn.Module | None = None,
                 norm_type: str | None = None, input_size: int | None = None) -> None:
        super().__init__()
        in_dim = input_size or hidden_size
        self.num_quantiles, self.output_size = int(num_quantiles), int(output_size)
        self.embedding = CosineQuantileEmbedding(quantile_embedding_size, in_dim)
        self.Q = mlp(in_dim, [hidden_size] * layer_num, activation, norm_type, out_dim=self.output_size)

    def forward(self, x: torch.Tensor, num_quantiles: int | None = None) -> dict[str, torch.Tensor]:
        n, batch = int(num_quantiles or self.num_quantiles), x.shape[0]
        quantiles = torch.rand(n * batch, 1, device=x.device, dtype=x.dtype)
        mixed = x.repeat(n, 1) * self.embedding(quantiles)
        q = self.Q(mixed).view(n, batch, self.output_size)
        return {"logit": q.mean(0), "q": q, "quantiles": quantiles}


class FQFHead(nn.Module):
    """FQF's head: a fraction-proposal network (``quantiles_proposal``) splits [0, 1] into ``num_quantiles``
    intervals per sample; the quantile-value network (``fqf_fc``, fed the cosine embedding of each fraction) gives
    the return at each interval's midpoint.

    ``{'logit': (B, A) the interval-weighted mean, 'q': (B, N, A) at the midpoints, 'quantiles': (B, N + 1) the
    fractions 0 = tau_0 < ... < tau_N = 1, 'quantiles_hats': (B, N) the midpoints, 'q_tau_i': (B, N - 1, A) at the
    inner fractions tau_1..tau_{N-1}}``. The value network sees the fractions detached (the fractions are trained
    by the fraction loss on ``q_tau_i``, not through the quantile values).
    """

    def __init__(self, hidden_size: int, output_size: int, layer_num: int = 1, num_quantiles: int = 32,
                 quantile_embedding_size: int = 128, activation: nn.Module | None = None,
                 norm_type: str | None = None, input_size: int | None = None) -> None:
        super().__init__()
        in_dim = input_size or hidden_size
        self.num_quantiles, self.output_size = int(num_quantiles), int(output_size)
        if self.num_quantiles < 2:
            raise ValueError(f"FQFHead: num_quantiles must be >= 2, got {num_quantiles}")
        self.quantiles_proposal = nn.Sequential(nn.Linear(in_dim, self.num_quantiles), nn.LogSoftmax(dim=-1))
        self.embedding = CosineQuantileEmbedding(quantile_embedding_size, in_dim)
        self.fqf_fc = mlp(in_dim, [hidden_size] * layer_num, activation, norm_type, out_dim=self.output_size)

    def _values_at(self, x: torch.Tensor, tau: torch.Tensor) -> torch.Tensor:
        """Quantile values (B, K, A) at fractions ``tau`` (B, K)."""
        mixed = x.unsqueeze(1) * self.embedding(tau.unsqueeze(-1))
        return self.fqf_fc(mixed)

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        probs = self.quantiles_proposal(x.detach()).exp()
        quantiles = torch.cat([probs.new_zeros(x.shape[0], 1), torch.cumsum(probs, dim=-1)], dim=-1)
        hats = (quantiles[:, 1:] + quantiles[:, :-1]) / 2
        q = self._values_at(x, hats.detach())
        q_tau_i = self._values_at(x, quantiles[:, 1:-1].detach())
        width = (quantiles[:, 1:] - quantiles[:, :-1]).detach().unsqueeze(-1)
        return {"logit": (width * q).sum(1), "q": q, "quantiles": quantiles, "quantiles_hats": hats,
                "q_tau_i": q_tau_i}
