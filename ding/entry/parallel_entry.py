"""``parallel_pipeline`` / ``ding -m parallel``: reads its input; :func:`ding.parallel.launch.local.launch_parallel`
compiles and runs it (docs/parallel.md)."""
from __future__ import annotations

import copy
import os
from typing import Any

from ding.config import read_config_with_system
from ding.parallel.launch.driver import NO_LIMIT, ParallelRunError  # noqa: F401 -- a user's import path
from ding.parallel.launch.local import launch_parallel
from ding.utils import ResumeError, setup_torch_threads


def parallel_pipeline(input_cfg: str | tuple[dict, dict, dict], seed: int = 0, enable_total_log: bool | None = False,
                      disable_flask_log: bool | None = True, *, max_env_step: int | None = None,
                      max_train_iter: int | None = None, resume: bool = False, extend: bool = False,
                      source: str | None = None, platform: str = "local") -> dict[str, Any]:
    """Train in parallel mode until an evaluation reaches ``env.stop_value`` (or a limit); return the run's result,
    also written to ``./<exp_name>/result``. ``input_cfg``: a config file or ``(main, create, system)`` configs;
    ``enable_total_log`` / ``disable_flask_log``: accepted for DI-engine. ``resume=True`` continues the stopped run in
    ``./<exp_name>/``, ``extend=True`` also one that reached its stop value, up to the limits given.
    ``platform='slurm'`` runs every role as a Slurm step (docs/distributed.md); it does not resume."""
    setup_torch_threads()
    if extend and not resume:
        raise ResumeError("extend continues a finished run: use it with --resume (resume=True)")
    if extend and not any(x is not None and x < NO_LIMIT for x in (max_env_step, max_train_iter)):
        raise ResumeError("--extend trains a finished run on until --train-iter or --env-step (the stop value no "
                          "longer ends it): give one of them")
    path = os.fspath(input_cfg) if isinstance(input_cfg, (str, os.PathLike)) else None
    if path is not None:
        main, create, system = read_config_with_system(path)
    elif isinstance(input_cfg, (tuple, list)) and len(input_cfg) == 3:
        main, create, system = (copy.deepcopy(c) for c in input_cfg)
    else:
        raise TypeError("parallel_pipeline: input_cfg must be a config file path or a (main_config, create_config, "
                        f"system_config) tuple, got {type(input_cfg).__name__}")
    return launch_parallel(main, create, system, seed=seed, source=source or path, max_env_step=max_env_step,
                           max_train_iter=max_train_iter, resume=resume, extend=extend, platform=platform)
