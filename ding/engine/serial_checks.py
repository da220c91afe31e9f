"""The checks and input handling the serial runs share (``Trainer``, ``serial_pipeline``, ``eval``)."""
from __future__ import annotations

import copy
import os
from typing import Any

from ding.config import read_config
from ding.config.ranges import at_least
from ding.utils import ConfigError


def load_input(input_cfg: Any, source: str | None, where: str = "serial_pipeline") -> tuple[dict, dict, str | None]:
    """``(main_config, create_config, source)`` from a config file path or a pair (copied: the caller's dicts are
    never changed)."""
    if isinstance(input_cfg, (str, os.PathLike)):
        main_cfg, create_cfg = read_config(os.fspath(input_cfg))
        return main_cfg, create_cfg, os.fspath(input_cfg)
    if not (isinstance(input_cfg, (tuple, list)) and len(input_cfg) == 2):
        raise TypeError(
            f"{where}: input_cfg must be a config file path or a (main_config, create_config) tuple, "
            f"got {type(input_cfg).__name__}"
        )
    main_cfg, create_cfg = input_cfg
    return copy.deepcopy(main_cfg), copy.deepcopy(create_cfg), source


def check_limits(**limits: int | None) -> None:
    """``max_train_iter`` / ``max_env_step`` (``--train-iter`` / ``--env-step``) are counts: ints >= 0 (None: none)."""
    flags = {"max_train_iter": "--train-iter", "max_env_step": "--env-step"}
    problems = [f"{name} ({flags[name]}): {why}" for name, value in limits.items()
                if value is not None and (why := at_least(0, integer=True).problem(value))]
    if problems:
        raise ConfigError("\n".join(problems))


def share_priority_settings(cfg: Any) -> None:
    """The policy decides whether priorities exist (its learner returns them); a prioritized buffer follows it, and
    a buffer without priorities is an error rather than silently sampling uniformly."""
    buffer_cfg = cfg.policy.other.get("replay_buffer")
    wanted = [k for k in ("priority", "priority_IS_weight") if cfg.policy.get(k)]
    if wanted and buffer_cfg is not None and "priority" not in buffer_cfg:
        raise ConfigError(
            f"policy.{wanted[0]}=True, but the {buffer_cfg.get('type')!r} replay buffer does not sample by priority; "
            "use create_config.replay_buffer.type='advanced', or set policy.priority and policy.priority_IS_weight "
            "to False"
        )
    if buffer_cfg is not None and "priority" in buffer_cfg:
        buffer_cfg.priority = bool(cfg.policy.get("priority", False))
        if "priority_IS_weight" in buffer_cfg:
            buffer_cfg.priority_IS_weight = bool(cfg.policy.get("priority_IS_weight", False))


def check_pipeline_fits_policy(cfg: Any, on_policy: bool, source: str | None) -> None:
    """An on-policy algorithm needs the on-policy loop (no replay buffer) and an off-policy one the other."""
    where = f" (in {source})" if source else ""
    if on_policy and cfg.policy.get("random_collect_size", 0):
        raise ConfigError(
            f"policy.random_collect_size: {cfg.policy.random_collect_size}{where}, but an on-policy run has no "
            "replay buffer to warm up (it trains on what its own policy collects); remove it or set it to 0"
        )
    if bool(cfg.policy.get("on_policy", False)) == on_policy:
        return
    name = cfg.policy.get("type")
    if on_policy:
        raise ConfigError(
            f"policy.on_policy: policy {name!r} is off-policy (policy.on_policy=False{where}): it trains from a replay "
            "buffer; run it with serial_pipeline (ding -m serial), or set policy.on_policy=True to train it on fresh "
            "data only"
        )
    raise ConfigError(
        f"policy.on_policy: policy {name!r} is on-policy (policy.on_policy=True{where}): it trains on freshly "
        "collected data without a replay buffer; run it with serial_pipeline_onpolicy (ding -m serial_onpolicy)"
    )
