"""``serial_pipeline``: the off-policy training loop (collect → push → sample → train), one process.

Both serial pipelines run through :class:`~ding.entry.trainer.Trainer` (set-up, run directory and lock, resume
check, components, Ctrl-C, undo of a failed resume): :func:`run_serial` builds one and runs it to the end.
``serial_pipeline_onpolicy`` is in :mod:`ding.entry.serial_entry_onpolicy`.
"""
from __future__ import annotations

from typing import Any

import torch

from ding.engine.training_view import GracefulStop

from .trainer import Trainer


def serial_pipeline(
    input_cfg: str | tuple[dict, dict],
    seed: int = 0,
    env_setting: list | None = None,
    model: torch.nn.Module | None = None,
    max_train_iter: int | None = int(1e10),
    max_env_step: int | None = int(1e10),
    dynamic_seed: bool | None = True,
    *,
    resume: bool | None = None,
    extend: bool = False,
    source: str | None = None,
) -> Any:
    """Train an off-policy policy until the evaluator reaches ``stop_value`` or a limit; return the policy.

    ``input_cfg`` is a config file path or ``(main_config, create_config)``. ``resume=True`` (or
    ``policy.learn.resume_training=True``) continues the run in ``./<exp_name>/`` from its latest checkpoint, exactly.
    A finished run is not resumed unless ``extend=True``: it then trains on to ``max_train_iter`` / ``max_env_step``
    and the stop value no longer ends it.
    """
    return run_serial(input_cfg, seed, env_setting, model, max_train_iter, max_env_step, dynamic_seed,
                      resume=resume, extend=extend, source=source, on_policy=False)


def run_serial(
    input_cfg: str | tuple[dict, dict],
    seed: int,
    env_setting: list | None,
    model: torch.nn.Module | None,
    max_train_iter: int | None,
    max_env_step: int | None,
    dynamic_seed: bool | None,
    *,
    resume: bool | None,
    extend: bool,
    source: str | None,
    on_policy: bool,
) -> Any:
    """What both serial pipelines do: a :class:`Trainer` (``on_policy`` chooses the loop and whether a replay buffer
    is built) run to its end under one Ctrl-C guard. Returns the trained policy."""
    with GracefulStop() as stop:
        with Trainer(input_cfg, seed, env_setting=env_setting, model=model, max_env_step=max_env_step,
                     max_train_iter=max_train_iter, dynamic_seed=dynamic_seed, resume=resume, extend=extend,
                     on_policy=on_policy, source=source, _stop=stop) as trainer:
            trainer.run()
    return trainer.policy
