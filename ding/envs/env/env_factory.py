"""Find env classes through ``ENV_REGISTRY`` and make the per-env configs of a vectorised setting."""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, overload

from ding.utils import ENV_REGISTRY, ConfigError, import_module

from .base_env import BaseEnv


def get_env_cls(cfg: Mapping) -> type[BaseEnv]:
    """The env class named by ``cfg.type`` (after importing ``cfg.import_names``)."""
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"env config: expected a dict with 'type' (and 'import_names'), got {type(cfg).__name__}")
    env_type = cfg.get("type")
    if env_type is None:
        raise ConfigError(
            "env.type: missing. Set create_config.env.type to a registered env name (e.g. 'cartpole') and list the "
            "module that registers it in create_config.env.import_names."
        )
    import_module(cfg.get("import_names", ()))
    return ENV_REGISTRY.get(env_type, where="env.type")


def create_env(cfg: dict) -> BaseEnv:
    """Build one env of type ``cfg.type`` from ``cfg``."""
    return get_env_cls(cfg)(cfg)


@overload
def get_vec_env_setting(
    cfg: dict, collect: Literal[True] = ..., eval_: Literal[True] = ...
) -> tuple[type[BaseEnv], list[dict[str, Any]], list[dict[str, Any]]]: ...


@overload
def get_vec_env_setting(
    cfg: dict, collect: Literal[False], eval_: Literal[True] = ...
) -> tuple[type[BaseEnv], None, list[dict[str, Any]]]: ...


@overload
def get_vec_env_setting(
    cfg: dict, collect: bool = ..., eval_: bool = ...
) -> tuple[type[BaseEnv], list[dict[str, Any]] | None, list[dict[str, Any]] | None]: ...


def get_vec_env_setting(
    cfg: dict, collect: bool = True, eval_: bool = True
) -> tuple[type[BaseEnv], list[dict[str, Any]] | None, list[dict[str, Any]] | None]:
    """Return ``(env_fn, collector_env_cfgs, evaluator_env_cfgs)``.

    ``env_fn`` is the env class, called as ``env_fn(cfg_i)`` for each per-env config; a list is None when its side
    is not asked for. ``cfg`` itself is not changed.
    """
    env_fn = get_env_cls(cfg)
    collector_env_cfg = env_fn.create_collector_env_cfg(cfg) if collect else None
    evaluator_env_cfg = env_fn.create_evaluator_env_cfg(cfg) if eval_ else None
    return env_fn, collector_env_cfg, evaluator_env_cfg
