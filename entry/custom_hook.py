"""A learner-hook plugin: log a custom metric and stop training early when a condition holds.

The hook is registered under a type name (``q_value_watch``) and switched on from the config, the same way a
plugin in its own module would be (there, list the module in ``policy.learn.learner.import_names``).

Run from the repository root: ``python entry/custom_hook.py``.
"""
from __future__ import annotations

import copy

from ding.entry import serial_pipeline
from ding.worker import LearnerHook, register_learner_hook


class QValueWatchHook(LearnerHook):
    """Tracks an exponential moving average of the mean Q-value the policy reports; stops once it reaches a target.

    ext_args: ``target`` (stop when the EMA reaches it), ``smoothing`` (EMA weight of the past, 0..1).
    """

    def __init__(self, *args, ext_args: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        ext_args = ext_args or {}
        self.target = float(ext_args.get("target", 10.0))
        self.smoothing = float(ext_args.get("smoothing", 0.98))
        self.ema: float | None = None

    def __call__(self, learner) -> None:
        q = learner.log_buffer["scalar"]["q_value"]
        self.ema = q if self.ema is None else self.smoothing * self.ema + (1 - self.smoothing) * q
        if learner.tb_logger is not None:
            learner.tb_logger.add_scalar("learner_iter/custom/q_value_ema", self.ema, learner.train_iter)
        if self.ema >= self.target:
            learner.info(f"q_value_watch: Q-value EMA {self.ema:.2f} reached {self.target}; stopping")
            learner.request_stop()


register_learner_hook("q_value_watch", QValueWatchHook)


def main(target: float = 4.0, seed: int = 0):
    from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config

    main_cfg = copy.deepcopy(main_config)
    main_cfg.exp_name = "cartpole_dqn_custom_hook"
    main_cfg.policy.learn.learner = dict(
        hook=dict(
            q_watch=dict(name="q_watch", type="q_value_watch", position="after_iter", priority=60,
                         ext_args=dict(target=target)),
        ),
    )
    return serial_pipeline((main_cfg, copy.deepcopy(create_config)), seed=seed)


if __name__ == "__main__":
    main()
