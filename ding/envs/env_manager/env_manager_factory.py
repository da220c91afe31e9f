"""Build an env manager from its config (``env.manager``) through ``ENV_MANAGER_REGISTRY``."""
from __future__ import annotations

import copy
from collections.abc import Callable, Mapping

from ding.utils import ENV_MANAGER_REGISTRY, import_module

from ..env.base_env import BaseEnv
from .base_env_manager import BaseEnvManager


def get_env_manager_cls(cfg: Mapping) -> type[BaseEnvManager]:
    """The manager class named by ``cfg.type`` (default ``'base'``), after importing ``cfg.import_names``."""
    import_module((cfg or {}).get("import_names", ()))
    return ENV_MANAGER_REGISTRY.get((cfg or {}).get("type") or "base", where="env.manager.type")


def create_env_manager(manager_cfg: Mapping | None, env_fn: list[Callable[[], BaseEnv]]) -> BaseEnvManager:
    """``create_env_manager(cfg.env.manager, [partial(env_cls, cfg=c) for c in collector_env_cfg])``."""
    cfg = dict(copy.deepcopy(dict(manager_cfg or {})))
    cls = get_env_manager_cls(cfg)
    for key in ("type", "import_names"):
        cfg.pop(key, None)
    return cls(env_fn, cfg)
