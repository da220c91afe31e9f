"""``serial_pipeline_onpolicy``: the on-policy training loop (collect → train on exactly that data), one process."""
from __future__ import annotations

from typing import Any

import torch

from .serial_entry import run_serial


def serial_pipeline_onpolicy(
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
    """Train an on-policy policy (``policy.on_policy=True``: PPO, A2C) until the evaluator reaches ``stop_value`` or
    a limit; return the policy.

    No replay buffer: each cycle collects ``policy.collect.n_sample`` samples (or ``n_episode`` episodes with the
    episode collector) and calls ``learner.train`` once on exactly them; the policy may split them into epochs and
    minibatches and return one log dict per minibatch (one train iteration each). Everything else is
    :func:`~ding.entry.serial_pipeline`'s: console view, logs, checkpoints, hooks, exact resume (``resume=True``,
    ``extend``), Ctrl-C.
    """
    return run_serial(input_cfg, seed, env_setting, model, max_train_iter, max_env_step, dynamic_seed,
                      resume=resume, extend=extend, source=source, on_policy=True)
