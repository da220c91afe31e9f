"""Rainbow: C51 + n-step returns + prioritized replay + dueling + noisy nets."""
from __future__ import annotations

from typing import Any

from ding.model import set_noise
from ding.utils import POLICY_REGISTRY

from .c51 import C51Policy


@POLICY_REGISTRY.register("rainbow")
class RainbowPolicy(C51Policy):
    """Rainbow (Hessel et al. 2018) without its distributed parts: the C51 update with n-step returns, prioritized
    replay (priority = each sample's cross-entropy) and importance weights, on a dueling model of noisy linear
    layers (``model.noise``, ``model.dueling``, both True by default).

    Exploration comes from the noise, resampled at every forward while learning and collecting: with a noisy model
    the collector's ``eps`` is ignored (greedy on the noisy Q). Evaluation switches the noise off (the mean
    network). With ``model.noise=False`` collection is epsilon-greedy like C51's.
    """

    _learn_takes_columns = True  # its learn step reads a ColumnBatch's columns (ding.utils.data.column_batch)

    config = dict(
        type="rainbow",
        priority=True,
        priority_IS_weight=True,
        discount_factor=0.99,
        nstep=3,
    )

    def default_model(self) -> tuple[str, list[str]]:
        return "rainbowdqn", ["ding.model.template.q_learning"]

    def _init_learn(self) -> None:
        super()._init_learn()
        set_noise(self._target_model, True)  # the target's bootstrap distribution is noisy too, independently

    def _forward_learn(self, data: list[dict[str, Any]]) -> dict[str, Any]:
        set_noise(self._model, True)
        return super()._forward_learn(data)

    def _init_collect(self) -> None:
        super()._init_collect()
        self._noisy = set_noise(self._model, True) > 0

    def _forward_collect(self, data: dict[int, Any], eps: float | None = None) -> dict[int, dict[str, Any]]:
        """Greedy on the noisy Q-values (fresh noise for this step); epsilon-greedy only when the model has no
        noisy layers."""
        if self._noisy:
            set_noise(self._model, True)
            eps = 0.0
        return super()._forward_collect(data, eps=eps)

    def _forward_eval(self, data: dict[int, Any]) -> dict[int, dict[str, Any]]:
        """Greedy on the noise-free (mean) network."""
        set_noise(self._model, False)
        return super()._forward_eval(data)

# DI-engine's config files name the command-mode twin 'rainbow_command'; here the command mode is part of the policy.
POLICY_REGISTRY.register("rainbow_command", RainbowPolicy)
