"""TD3: DDPG with twin critics (clipped double Q), target policy smoothing and delayed actor updates."""
from __future__ import annotations

from ding.utils import POLICY_REGISTRY

from .ddpg import DDPGPolicy


@POLICY_REGISTRY.register("td3")
class TD3Policy(DDPGPolicy):
    """TD3 (Fujimoto et al. 2018). The update is :class:`DDPGPolicy`'s; TD3's defaults switch on its three changes:
    ``model.twin_critic`` (target = min of two critics), ``learn.noise`` (clipped Gaussian noise on the target
    action) and ``learn.actor_update_freq=2`` (one actor and target update per two critic updates)."""

    _learn_takes_columns = True  # its learn step reads a ColumnBatch's columns (ding.utils.data.column_batch)

    config = dict(
        type="td3",
        model=dict(twin_critic=True),
        learn=dict(
            actor_update_freq=2,
            noise=True,
            noise_sigma=0.2,
            noise_range=dict(min=-0.5, max=0.5),
        ),
    )


# DI-engine registers a command-mode twin 'td3_command'; here the command mode is part of the policy.
POLICY_REGISTRY.register("td3_command", TD3Policy)
