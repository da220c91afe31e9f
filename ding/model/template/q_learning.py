"""Q-networks for discrete actions: DQN (double / dueling), C51 and Rainbow (distributional), DRQN (recurrent)."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Sequence

import torch
import torch.nn as nn

from ding.config.ranges import at_least, one_of, shape, sizes
from ding.utils import MODEL_REGISTRY

from ..common import (
    NATURE_CNN_SIZES,
    ConvEncoder,
    DiscreteHead,
    DistributionHead,
    DuelingHead,
    FCEncoder,
    discrete_head,
)
from ..common.nn_module import NORM_TYPES


def as_shape(shape: int | Sequence[int], what: str) -> tuple[int, ...]:
    """Normalise an int or a sequence of ints into a tuple."""
    if isinstance(shape, bool):
        raise ValueError(f"{what}: expected an int or a list of ints, got {shape!r}")
    if isinstance(shape, int):
        return (shape,)
    if isinstance(shape, (str, bytes)):
        raise ValueError(f"{what}: expected an int or a list of ints, got {type(shape).__name__} {shape!r}")
    try:
        out = tuple(int(s) for s in shape)
    except TypeError:
        raise ValueError(f"{what}: expected an int or a list of ints, got {shape!r}") from None
    if not out:
        raise ValueError(f"{what}: got an empty shape")
    return out


VECTOR_ENCODER_SIZES = (128, 128, 64)  # the templates' default MLP for vector observations


def build_encoder(
    obs_shape: tuple[int, ...], hidden_size_list: Sequence[int] | None, activation: nn.Module | None,
    norm_type: str | None
) -> FCEncoder | ConvEncoder:
    """FCEncoder for 1-d observations, ConvEncoder for (C, H, W) images; ``hidden_size_list=None`` picks the
    default of each: :data:`VECTOR_ENCODER_SIZES`, or the Nature CNN (``NATURE_CNN_SIZES``) for images."""
    if len(obs_shape) == 1:
        return FCEncoder(obs_shape[0], hidden_size_list or VECTOR_ENCODER_SIZES, activation=activation,
                         norm_type=norm_type)
    if len(obs_shape) == 3:
        return ConvEncoder(obs_shape, hidden_size_list or NATURE_CNN_SIZES, activation, norm_type=norm_type)
    raise ValueError(f"obs_shape {obs_shape}: use an int (vector observations) or (C, H, W) (images)")


@MODEL_REGISTRY.register("dqn")
class DQN(nn.Module):
    """Encoder + (dueling) Q head; ``forward(obs) -> {'logit': (B, n_actions)}`` Q-values.

    A list ``action_shape`` of several dimensions (DI-engine's multi-discrete form, e.g. ``[2, 3, 6]``) builds one
    head per dimension: ``logit`` is then a list ``[(B, 2), (B, 3), (B, 6)]``.
    """

    # Allowed values of the keyword arguments (policy.model.*), checked by create_model (ding/config/ranges.py).
    config_ranges = {
        "obs_shape": shape(),
        "action_shape": shape(),
        "encoder_hidden_size_list": sizes(),
        "head_hidden_size": at_least(1, integer=True),
        "head_layer_num": at_least(0, integer=True),
        "norm_type": one_of(*NORM_TYPES),
    }

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int | Sequence[int],
        encoder_hidden_size_list: Sequence[int] | None = None,
        dueling: bool = True,
        head_hidden_size: int | None = None,
        head_layer_num: int = 1,
        activation: nn.Module | None = None,
        norm_type: str | None = None,
    ) -> None:
        super().__init__()
        self.obs_shape = as_shape(obs_shape, "DQN obs_shape")
        action = as_shape(action_shape, "DQN action_shape")
        self.action_shape: int | tuple[int, ...] = action[0] if len(action) == 1 else action
        self.encoder = build_encoder(self.obs_shape, encoder_hidden_size_list, activation, norm_type)
        self.head = discrete_head(
            DuelingHead if dueling else DiscreteHead,
            head_hidden_size or self.encoder.output_size,
            action,
            layer_num=head_layer_num,
            activation=activation,
            norm_type=norm_type,
            input_size=self.encoder.output_size,
        )

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.head(self.encoder(x))


def _action_dims(action_shape: int | Sequence[int], what: str) -> tuple[int, ...]:
    """The discrete action dimensions: ``(n,)`` for one, several for DI-engine's multi-discrete list form."""
    return as_shape(action_shape, f"{what} action_shape")


@MODEL_REGISTRY.register("c51dqn")
class C51DQN(nn.Module):
    """Encoder + categorical distribution head (C51).

    ``forward(obs) -> {'logit': (B, A) expected Q, 'distribution': (B, A, n_atom), 'log_distribution'}`` on the
    support ``linspace(v_min, v_max, n_atom)``. ``dueling`` and ``noise`` (noisy linear layers) are off by default;
    :class:`RainbowDQN` turns both on. A multi-discrete ``action_shape`` (a list) gives each output as a list, one
    entry per action dimension, as :class:`DQN` does.
    """

    config_ranges = {**DQN.config_ranges, "n_atom": at_least(2, integer=True)}
    default_dueling, default_noise = False, False

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int | Sequence[int],
        encoder_hidden_size_list: Sequence[int] | None = None,
        head_hidden_size: int | None = None,
        head_layer_num: int = 1,
        activation: nn.Module | None = None,
        norm_type: str | None = None,
        v_min: float = -10.0,
        v_max: float = 10.0,
        n_atom: int = 51,
        dueling: bool | None = None,
        noise: bool | None = None,
    ) -> None:
        super().__init__()
        name = type(self).__name__
        if not float(v_min) < float(v_max):
            raise ValueError(f"{name}: v_min ({v_min}) must be below v_max ({v_max}) (policy.model.v_min / v_max)")
        self.obs_shape = as_shape(obs_shape, f"{name} obs_shape")
        action = _action_dims(action_shape, name)
        self.action_shape: int | tuple[int, ...] = action[0] if len(action) == 1 else action
        self.v_min, self.v_max, self.n_atom = float(v_min), float(v_max), int(n_atom)
        self.encoder = build_encoder(self.obs_shape, encoder_hidden_size_list, activation, norm_type)
        self.head = discrete_head(
            DistributionHead,
            head_hidden_size or self.encoder.output_size,
            action,
            layer_num=head_layer_num,
            n_atom=self.n_atom,
            v_min=self.v_min,
            v_max=self.v_max,
            noise=self.default_noise if noise is None else bool(noise),
            dueling=self.default_dueling if dueling is None else bool(dueling),
            activation=activation,
            norm_type=norm_type,
            input_size=self.encoder.output_size,
        )

    def forward(self, x: torch.Tensor) -> dict[str, torch.Tensor]:
        return self.head(self.encoder(x))


@MODEL_REGISTRY.register("rainbowdqn")
class RainbowDQN(C51DQN):
    """:class:`C51DQN` with Rainbow's head: dueling streams of noisy linear layers (``dueling`` / ``noise`` default
    True). The encoder stays deterministic."""

    default_dueling, default_noise = True, True


LSTM_TYPES = ("normal", "pytorch")


def _per_dim(fn: Any, q: Any) -> Any:
    """``fn`` applied to a Q tensor, or to each of a multi-discrete action's list of them."""
    return [fn(t) for t in q] if isinstance(q, list) else fn(q)


@MODEL_REGISTRY.register("drqn")
class DRQN(nn.Module):
    """Encoder + LSTM + (dueling) Q head, for R2D2.

    ``forward(obs, prev_state=None) -> {'logit', 'next_state'}``. ``obs`` is one step ``(B, *obs_shape)`` (logit
    ``(B, A)``) or a sequence ``(B, T, *obs_shape)`` (logit ``(B, T, A)``). A state is a ``(B, 2, hidden)`` tensor
    holding the LSTM's ``h`` and ``c``; ``None`` means zeros (the start of an episode). ``res_link`` adds the
    encoder's output to the LSTM's. A multi-discrete ``action_shape`` gives ``logit`` as a list, one entry per action
    dimension.
    """

    config_ranges = {**DQN.config_ranges, "lstm_type": one_of(*LSTM_TYPES)}

    def __init__(
        self,
        obs_shape: int | Sequence[int],
        action_shape: int | Sequence[int],
        encoder_hidden_size_list: Sequence[int] | None = None,
        dueling: bool = True,
        head_hidden_size: int | None = None,
        head_layer_num: int = 1,
        lstm_type: str = "normal",
        activation: nn.Module | None = None,
        norm_type: str | None = None,
        res_link: bool = False,
    ) -> None:
        super().__init__()
        if lstm_type not in LSTM_TYPES:
            raise ValueError(f"DRQN lstm_type {lstm_type!r}: use one of {LSTM_TYPES} (both are torch's nn.LSTM)")
        self.obs_shape = as_shape(obs_shape, "DRQN obs_shape")
        action = _action_dims(action_shape, "DRQN")
        self.action_shape: int | tuple[int, ...] = action[0] if len(action) == 1 else action
        self.encoder = build_encoder(self.obs_shape, encoder_hidden_size_list, activation, norm_type)
        self.hidden_size = self.encoder.output_size
        self.lstm = nn.LSTM(self.hidden_size, self.hidden_size, batch_first=True)
        self.res_link = res_link
        self.head = discrete_head(DuelingHead if dueling else DiscreteHead, head_hidden_size or self.hidden_size,
                                  action, layer_num=head_layer_num, activation=activation, norm_type=norm_type,
                                  input_size=self.hidden_size)

    def forward(self, obs: Any, prev_state: torch.Tensor | None = None, inference: bool = False,
                saved_state_timesteps: Sequence[int] | None = None) -> dict[str, Any]:
        """``obs`` a tensor: ding's form (above). ``obs`` a dict ``{'obs', 'prev_state'}``: DI-engine's form, see
        :meth:`_forward_di_engine`."""
        if isinstance(obs, Mapping):
            return self._forward_di_engine(obs, inference, saved_state_timesteps)
        sequence = obs.dim() == len(self.obs_shape) + 2
        x = obs if sequence else obs.unsqueeze(1)
        q, _, state = self._unroll(x, prev_state)
        return {"logit": q if sequence else _per_dim(lambda t: t[:, 0], q), "next_state": state}

    def _unroll(self, x: torch.Tensor, prev_state: torch.Tensor | None) -> tuple[Any, torch.Tensor, torch.Tensor]:
        """``x`` (B, T, *obs_shape) from state (B, 2, hidden) -> Q (B, T, A) (a list of them for a multi-discrete
        action), LSTM outputs h (B, T, hidden), the state after the last step (B, 2, hidden)."""
        batch, steps = x.shape[:2]
        feature = self.encoder(x.reshape(batch * steps, *self.obs_shape)).view(batch, steps, -1)
        state = None
        if prev_state is not None:
            state = (prev_state[:, 0].unsqueeze(0).contiguous(), prev_state[:, 1].unsqueeze(0).contiguous())
        h_all, (h, c) = self.lstm(feature, state)
        out = h_all + feature if self.res_link else h_all
        logit = self.head(out.reshape(batch * steps, -1))["logit"]
        q = [t.view(batch, steps, -1) for t in logit] if isinstance(logit, list) else logit.view(batch, steps, -1)
        return q, h_all, torch.stack([h[0], c[0]], dim=1)

    def _forward_di_engine(self, inputs: Mapping[str, Any], inference: bool,
                           saved_state_timesteps: Sequence[int] | None) -> dict[str, Any]:
        """DI-engine's DRQN call (its ``r2d2.py`` makes it). ``inputs['prev_state']``: one entry per sample, None
        (zeros) or ``{'h', 'c'}`` of shape (1, 1, hidden). ``inference``: ``obs`` is one step (B, N) -> ``logit``
        (B, A); else a time-major sequence (T, B, N) -> ``logit`` (T, B, A), ``hidden_state`` (T, B, hidden) and,
        for ``saved_state_timesteps``, ``saved_state``: the states after those many steps. ``next_state``: the
        states after the last step, in the same per-sample form."""
        x = inputs["obs"]
        state = self._stack_states(inputs.get("prev_state"), x.shape[0] if inference else x.shape[1], x)
        if inference:
            q, _, state = self._unroll(x.unsqueeze(1), state)
            return {"logit": _per_dim(lambda t: t[:, 0], q), "next_state": self._split_states(state)}
        seq = x.transpose(0, 1)
        steps = seq.shape[1]
        cuts = sorted({int(t) for t in (saved_state_timesteps or ()) if 0 < int(t) < steps}) + [steps]
        qs, hs, saved, start = [], [], {}, 0
        for end in cuts:
            q, h_all, state = self._unroll(seq[:, start:end], state)
            qs.append(q)
            hs.append(h_all)
            saved[end] = self._split_states(state)
            start = end
        if isinstance(qs[0], list):
            logit: Any = [torch.cat(parts, 1).transpose(0, 1) for parts in zip(*qs)]
        else:
            logit = torch.cat(qs, 1).transpose(0, 1)
        out: dict[str, Any] = {"logit": logit, "next_state": saved[steps],
                               "hidden_state": torch.cat(hs, 1).transpose(0, 1)}
        if saved_state_timesteps is not None:
            out["saved_state"] = [saved[int(t)] if int(t) in saved else self._split_states(state)
                                  for t in saved_state_timesteps]
        return out

    def _stack_states(self, prev_state: Any, batch: int, like: torch.Tensor) -> torch.Tensor:
        zeros = like.new_zeros(2, self.hidden_size)
        if prev_state is None:
            return like.new_zeros(batch, 2, self.hidden_size)
        if len(prev_state) != batch:
            raise ValueError(f"DRQN: prev_state has {len(prev_state)} entries for a batch of {batch}")
        return torch.stack([zeros if s is None else torch.stack([s["h"].reshape(-1), s["c"].reshape(-1)])
                            for s in prev_state])

    @staticmethod
    def _split_states(state: torch.Tensor) -> list[dict[str, torch.Tensor]]:
        return [{"h": s[0].view(1, 1, -1), "c": s[1].view(1, 1, -1)} for s in state]
