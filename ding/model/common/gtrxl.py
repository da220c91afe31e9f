"""A gated Transformer-XL core (GTrXL): causal self-attention over a memory of past steps, with GRU-style gates in
place of the residual connections.

Inputs are time-major ``(T, B, input_dim)``. Each layer keeps the last ``memory_len`` inputs it saw (per batch
column) as a memory that the next call attends to as well, so a long episode can be fed in chunks; the memory is
detached (no gradient flows into earlier chunks). Positions are encoded by sinusoids over the memory + chunk span,
added to the keys and queries.
"""
from __future__ import annotations

import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class GRUGate(nn.Module):
    """``out = (1 - z) * x + z * tanh(W y + U (r * x))`` with ``r = sigmoid(W_r y + U_r x)`` and
    ``z = sigmoid(W_z y + U_z x - bias)``: the gate starts near the identity on ``x`` (``bias > 0``)."""

    def __init__(self, dim: int, bias: float = 2.0) -> None:
        super().__init__()
        self.w = nn.Linear(dim, 3 * dim, bias=False)
        self.u = nn.Linear(dim, 2 * dim, bias=False)
        self.u_h = nn.Linear(dim, dim, bias=False)
        self.bias = float(bias)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        wr, wz, wh = self.w(y).chunk(3, dim=-1)
        ur, uz = self.u(x).chunk(2, dim=-1)
        r = torch.sigmoid(wr + ur)
        z = torch.sigmoid(wz + uz - self.bias)
        h = torch.tanh(wh + self.u_h(r * x))
        return (1 - z) * x + z * h


def sinusoid_positions(length: int, dim: int, device: torch.device) -> torch.Tensor:
    """(length, dim) sinusoidal position codes, position 0 first."""
    pos = torch.arange(length, device=device, dtype=torch.float32).unsqueeze(1)
    freq = torch.exp(torch.arange(0, dim, 2, device=device, dtype=torch.float32) * (-math.log(10000.0) / dim))
    codes = torch.zeros(length, dim, device=device)
    codes[:, 0::2] = torch.sin(pos * freq)
    codes[:, 1::2] = torch.cos(pos * freq)[:, :dim // 2]
    return codes


class GatedTransformerLayer(nn.Module):
    """Pre-norm causal attention and MLP, each merged into the stream by a :class:`GRUGate` (or a plain residual
    sum with ``gru_gating=False``)."""

    def __init__(self, dim: int, head_dim: int, head_num: int, mlp_num: int, activation: nn.Module,
                 dropout: float, gru_gating: bool, gru_bias: float) -> None:
        super().__init__()
        self.head_dim, self.head_num = head_dim, head_num
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv = nn.Linear(dim, 3 * head_dim * head_num)
        self.out = nn.Linear(head_dim * head_num, dim)
        layers: list[nn.Module] = []
        for _ in range(max(1, mlp_num)):
            layers += [nn.Linear(dim, dim), activation]
        self.mlp = nn.Sequential(*layers)
        self.dropout = nn.Dropout(dropout)
        self.gate1 = GRUGate(dim, gru_bias) if gru_gating else None
        self.gate2 = GRUGate(dim, gru_bias) if gru_gating else None

    def _merge(self, gate: GRUGate | None, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return x + y if gate is None else gate(x, y)

    def forward(self, x: torch.Tensor, memory: torch.Tensor) -> torch.Tensor:
        """``x`` (T, B, D), ``memory`` (M, B, D) -> (T, B, D)."""
        steps, batch, dim = x.shape
        span = torch.cat([memory, x], dim=0)  # (M + T, B, D)
        h = self.norm1(span) + sinusoid_positions(span.shape[0], dim, x.device).unsqueeze(1)
        q, k, v = self.qkv(h).chunk(3, dim=-1)
        q = q[-steps:]

        def heads(t: torch.Tensor) -> torch.Tensor:  # (L, B, H*d) -> (B, H, L, d)
            return t.reshape(t.shape[0], batch, self.head_num, self.head_dim).permute(1, 2, 0, 3)

        mem_len = memory.shape[0]
        # query t (at span position mem_len + t) sees the memory and the chunk's steps up to t
        mask = torch.ones(steps, mem_len + steps, dtype=torch.bool, device=x.device).tril(diagonal=mem_len)
        att = F.scaled_dot_product_attention(heads(q), heads(k), heads(v), attn_mask=mask)
        att = att.permute(2, 0, 1, 3).reshape(steps, batch, -1)
        x = self._merge(self.gate1, x, self.dropout(F.relu(self.out(att))))
        return self._merge(self.gate2, x, self.dropout(self.mlp(self.norm2(x))))


class GTrXL(nn.Module):
    """A stack of :class:`GatedTransformerLayer` with a Transformer-XL memory per layer.

    ``forward(x)`` with ``x`` (T, B, input_dim) -> ``{'logit': (T, B, embedding_dim) the output, 'memory':
    (layer_num + 1, memory_len, B, embedding_dim) the memory after the call}``. ``use_embedding_layer=False`` takes
    ``x`` as already embedded (``input_dim == embedding_dim``, e.g. from a conv encoder). The memory lives in the
    module between calls; :meth:`reset_memory` clears it (a new episode, or a new batch size).
    """

    def __init__(self, input_dim: int, head_dim: int = 8, embedding_dim: int = 128, head_num: int = 2,
                 mlp_num: int = 2, layer_num: int = 3, memory_len: int = 64, dropout_ratio: float = 0.0,
                 activation: nn.Module | None = None, gru_gating: bool = True, gru_bias: float = 2.0,
                 use_embedding_layer: bool = True) -> None:
        super().__init__()
        act = activation if activation is not None else nn.ReLU()
        self.embedding_dim, self.layer_num, self.memory_len = int(embedding_dim), int(layer_num), int(memory_len)
        self.use_embedding_layer = use_embedding_layer
        self.embedding = nn.Sequential(nn.Linear(int(input_dim), self.embedding_dim), act)
        self.layers = nn.ModuleList([
            GatedTransformerLayer(self.embedding_dim, int(head_dim), int(head_num), int(mlp_num), act, dropout_ratio,
                                  gru_gating, gru_bias) for _ in range(self.layer_num)])
        self._memory: torch.Tensor | None = None

    def reset_memory(self, batch_size: int | None = None, state: torch.Tensor | None = None) -> None:
        """Forget the memory (``state`` given: take it, shaped as :meth:`get_memory` returns)."""
        self._memory = None if state is None else state.detach()

    def get_memory(self) -> torch.Tensor | None:
        """The memory ``(layer_num + 1, M, B, embedding_dim)`` (None before the first call / after a reset)."""
        return self._memory

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        h = self.embedding(x) if self.use_embedding_layer else x
        batch = h.shape[1]
        memory = self._memory
        if memory is None or memory.shape[2] != batch:
            memory = h.new_zeros(self.layer_num + 1, 0, batch, self.embedding_dim)
        inputs = [h]
        for i, layer in enumerate(self.layers):
            h = layer(h, memory[i])
            inputs.append(h)
        self._memory = torch.stack([torch.cat([memory[i], inputs[i]], dim=0)[-self.memory_len:].detach()
                                    for i in range(self.layer_num + 1)])
        return {"logit": h, "memory": self._memory}
