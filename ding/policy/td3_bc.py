"""TD3+BC: TD3 whose actor also regresses on the data's actions (Fujimoto & Gu 2021)."""
from __future__ import annotations

import torch
import torch.nn.functional as F

from ding.config.ranges import greater_than
from ding.rl_utils import td3_bc_lambda
from ding.utils import POLICY_REGISTRY

from .ddpg import _first
from .offline_utils import OFFLINE_COLLECT, OFFLINE_LEARN
from .qac_utils import QACBatch
from .td3 import TD3Policy


@POLICY_REGISTRY.register("td3_bc")
class TD3BCPolicy(TD3Policy):
    """TD3's critic update; the delayed actor minimises ``-lambda * Q_1(s, pi(s)) + (pi(s) - a)^2`` with
    ``lambda = alpha / mean|Q_1|`` (:func:`~ding.rl_utils.td3_bc_lambda`), so ``alpha`` trades RL against BC
    whatever the scale of the returns."""

    _learn_takes_columns = True  # its learn step reads a ColumnBatch's columns (ding.utils.data.column_batch)
    config = dict(
        type="td3_bc",
        learn=dict(
            **OFFLINE_LEARN,
            # TD3+BC's alpha: the weight of the Q term before normalisation.
            alpha=2.5,
        ),
        collect=dict(**OFFLINE_COLLECT),
    )
    config_ranges = {"learn.alpha": greater_than(0)}

    def _actor_loss(self, b: QACBatch) -> torch.Tensor:
        pi = self._model.compute_actor(b.obs)["action"]
        with self._critics_fixed:
            q = _first(self._model.compute_critic({"obs": b.obs, "action": pi})["q_value"])
        bc = F.mse_loss(pi.reshape(b.action.shape), b.action)
        return -td3_bc_lambda(q, float(self._cfg.learn.alpha)) * q.mean() + bc


POLICY_REGISTRY.register("td3_bc_command", TD3BCPolicy)
