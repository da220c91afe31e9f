"""GTrXL-DQN: DRQN's role with a gated Transformer-XL core (:mod:`ding.model.common.gtrxl`) in place of the LSTM."""
from __future__ import annotations

from typing import Any, Sequence

import torch
import torch.nn as nn

from ding.utils import MODEL_REGISTRY

from ..common import ConvEncoder, DiscreteHead, DuelingHead, discrete_head
from ..common.gtrxl import GTrXL
from .q_learning import as_shape


@MODEL_REGISTRY.register("gtrxldqn")
class GTrXLDQN(nn.Module):
    """Time-major observations ``(T, B, *obs_shape)`` -> ``{'logit': (T, B, A), 'memory', 'transformer_out':
    (T, B, hidden_size)}``.

    Vector observations are embedded by the core's own input layer; ``(C, H, W)`` images by a :class:`ConvEncoder`
    (``encoder_hidden_size_list``, whose last entry must equal ``hidden_size``). The core keeps a memory of the last
    ``memory_len`` steps between calls (:meth:`reset_memory` / :meth:`get_memory`). A multi-discrete
    ``action_shape`` gives ``logit`` as a list, one entry per action dimension.
    """

    def __init__(self, obs_shape: int | Sequence[int], action_shape: int | Sequence[int], head_layer_num: int = 1,
                 att_head_dim: int = 16, hidden_size: int = 16, att_head_num: int = 2, att_mlp_num: int = 2,
                 att_layer_num: int = 3, memory_len: int = 64, activation: nn.Module | None = None,
                 head_norm_type: str | None = None, dropout: float = 0.0, gru_gating: bool = True,
                 gru_bias: float = 2.0, dueling: bool = True,
                 encoder_hidden_size_list: Sequence[int] = (128, 128, 256),
                 encoder_norm_type: str | None = None) -> None:
        super().__init__()
        self.obs_shape = as_shape(obs_shape, "GTrXLDQN obs_shape")
        action = as_shape(action_shape, "GTrXLDQN action_shape")
        self.action_shape: int | tuple[int, ...] = action[0] if len(action) == 1 else action
        act = activation if activation is not None else nn.ReLU()
        self.obs_encoder: ConvEncoder | None = None
        if len(self.obs_shape) == 3:
            if int(encoder_hidden_size_list[-1]) != int(hidden_size):
                raise ValueError(f"GTrXLDQN: encoder_hidden_size_list[-1] ({encoder_hidden_size_list[-1]}) must "
                                 f"equal hidden_size ({hidden_size}) for image observations")
            self.obs_encoder = ConvEncoder(self.obs_shape, encoder_hidden_size_list, act, norm_type=encoder_norm_type)
        elif len(self.obs_shape) != 1:
            raise ValueError(f"GTrXLDQN obs_shape {self.obs_shape}: use an int (vectors) or (C, H, W) (images)")
        self.dropout = nn.Dropout(dropout)
        self.core = GTrXL(self.obs_shape[0] if self.obs_encoder is None else int(hidden_size), att_head_dim,
                          hidden_size, att_head_num, att_mlp_num, att_layer_num, memory_len, dropout, act, gru_gating,
                          gru_bias, use_embedding_layer=self.obs_encoder is None)
        self.head = discrete_head(DuelingHead if dueling else DiscreteHead, int(hidden_size), action,
                                  layer_num=head_layer_num, activation=act, norm_type=head_norm_type)

    def reset_memory(self, batch_size: int | None = None, state: torch.Tensor | None = None) -> None:
        self.core.reset_memory(batch_size, state)

    def get_memory(self) -> torch.Tensor | None:
        return self.core.get_memory()

    def forward(self, x: torch.Tensor) -> dict[str, Any]:
        steps, batch = x.shape[:2]
        if self.obs_encoder is not None:
            x = self.dropout(self.obs_encoder(x.reshape(steps * batch, *self.obs_shape))).view(steps, batch, -1)
        core = self.core(x)
        out = core["logit"]
        logit = self.head(out.reshape(steps * batch, -1))["logit"]
        if isinstance(logit, list):
            logit = [t.view(steps, batch, -1) for t in logit]
        else:
            logit = logit.view(steps, batch, -1)
        return {"logit": logit, "memory": core["memory"], "transformer_out": out}
