"""``serial_pipeline_battle``: self-play over a league in one process (``ding -m serial_battle``)."""
from __future__ import annotations

import os
from typing import Any

import torch

from ding.config import read_config
from ding.engine.battle_start import run_battle
from ding.engine.resume import Limits
from ding.engine.serial_checks import check_limits, load_input
from ding.engine.training_view import GracefulStop
from ding.utils import setup_torch_threads


def serial_pipeline_battle(
    input_cfg: str | tuple[dict, dict],
    seed: int = 0,
    model: torch.nn.Module | None = None,
    max_train_iter: int | None = int(1e10),
    max_env_step: int | None = int(1e10),
    dynamic_seed: bool | None = True,
    *,
    resume: bool = False,
    source: str | None = None,
) -> Any:
    """Train the players of the config's league (``policy.other.league``) by playing each other, until the main
    player reaches every evaluator's stop value (``env.stop_value``: one per fixed opponent the env offers) or a
    limit (``max_train_iter`` counts the main player's iterations); return the main player's policy.

    ``input_cfg`` is a config file path (DI-engine's demo files, whose dict is named after the file, too) or
    ``(main_config, create_config)``; the collector and evaluator default to
    the battle workers. ``resume=True`` continues the run in ``./<exp_name>/`` exactly, league state included.
    """
    setup_torch_threads()
    check_limits(max_train_iter=max_train_iter, max_env_step=max_env_step)
    if isinstance(input_cfg, (str, os.PathLike)):
        source = os.fspath(input_cfg)
        main_cfg, create_cfg = read_config(source, named_after_file=True)
    else:
        main_cfg, create_cfg, source = load_input(input_cfg, source, where="serial_pipeline_battle")
    limits = Limits(int(1e10) if max_train_iter is None else max_train_iter,
                    int(1e10) if max_env_step is None else max_env_step)
    with GracefulStop() as stop:
        run = run_battle(main_cfg, create_cfg, seed, limits=limits, resume=resume, model=model,
                         dynamic_seed=dynamic_seed, source=source, stop=stop)
    return run.main.policy
