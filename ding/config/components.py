"""The components a config is compiled from: where each one's config lives and which registry names its types."""
from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from easydict import EasyDict

from ding.utils import (
    BUFFER_REGISTRY,
    ENV_MANAGER_REGISTRY,
    ENV_REGISTRY,
    LEAGUE_REGISTRY,
    LEARNER_REGISTRY,
    POLICY_REGISTRY,
    REWARD_MODEL_REGISTRY,
    SERIAL_COLLECTOR_REGISTRY,
    SERIAL_COMMANDER_REGISTRY,
    SERIAL_EVALUATOR_REGISTRY,
    WORLD_MODEL_REGISTRY,
    ConfigError,
    Registry,
    import_module,
)

from .ranges import at_least, between


@dataclass(frozen=True)
class Part:
    """One component kind. ``name`` is its create_config section (and, except ``replay_buffer``, its argument name)."""

    name: str
    place: str  # dotted path of its config inside main_config
    registry: Registry
    default_type: str | None  # auto mode: the type used when no config names one (None: the part is skipped)
    # The key of its main_config section that names its type. A part named by another key (the league's DI-engine
    # 'league_type') has no create_config section: its type lives in the main config only.
    type_key: str = "type"
    # Compiled only where the user's main_config has its section (then in every mode, ``default_type`` if unnamed).
    optional: bool = False


# Outer sections come before the sections nested in them (env before env.manager, policy before its workers).
# The built-in types register when their packages are imported; a lookup that misses imports the installed plugins
# (ding.utils.load_plugins), which include ding's own packages, so ding.config never names a package above it.
PARTS: tuple[Part, ...] = (
    Part("env", "env", ENV_REGISTRY, None),
    Part("env_manager", "env.manager", ENV_MANAGER_REGISTRY, "base"),
    Part("policy", "policy", POLICY_REGISTRY, None),
    Part("learner", "policy.learn.learner", LEARNER_REGISTRY, "base"),
    Part("collector", "policy.collect.collector", SERIAL_COLLECTOR_REGISTRY, "sample"),
    Part("evaluator", "policy.eval.evaluator", SERIAL_EVALUATOR_REGISTRY, "interaction"),
    Part("replay_buffer", "policy.other.replay_buffer", BUFFER_REGISTRY, "advanced"),
    Part("commander", "policy.other.commander", SERIAL_COMMANDER_REGISTRY, "base"),
    # DI-engine's league_demo keeps its league here; its keys are checked against the league type's defaults.
    Part("league", "policy.other.league", LEAGUE_REGISTRY, "one_vs_one", type_key="league_type", optional=True),
    Part("reward_model", "reward_model", REWARD_MODEL_REGISTRY, None),
    Part("world_model", "world_model", WORLD_MODEL_REGISTRY, None),
)
PARTS_BY_NAME: dict[str, Part] = {p.name: p for p in PARTS}

# The base every compiled config starts from; component defaults are merged over it.
ENV_COMMON_CONFIG: dict[str, Any] = dict(
    type=None,  # registered env name (ENV_REGISTRY); usually given in create_config.env.type
    import_names=[],  # modules to import so that the env type is registered
    collector_env_num=8,  # envs stepped by the collector
    evaluator_env_num=5,  # envs stepped by the evaluator
    n_evaluator_episode=5,  # episodes per evaluation (copied to policy.eval.evaluator.n_episode)
    stop_value=float("inf"),  # training stops once the mean eval return reaches it (copied to the evaluator)
    manager=dict(),  # env manager config (defaults from the env manager class)
    # DI-engine's keys of the 'env_pool' manager (envs per answer); only the env count (synchronous batches) is
    # supported; the other managers ignore them
    collector_batch_size=None,
    evaluator_batch_size=None,
)
# Limits of the base keys (see ranges.py); each component declares its own in ``config_ranges``.
BASE_RANGES = {
    "seed": between(0, 2**32 - 1, integer=True, hint="set by `ding -s N` or serial_pipeline(seed=N)"),
    "env.collector_env_num": at_least(1, integer=True),
    "env.evaluator_env_num": at_least(1, integer=True),
    "env.n_evaluator_episode": at_least(1, integer=True),
}
POLICY_TEMPLATE = dict(
    cuda=False,  # run the policy's model on GPU
    model=dict(),
    learn=dict(learner=dict()),
    collect=dict(collector=dict()),
    eval=dict(evaluator=dict()),
    other=dict(replay_buffer=dict(), commander=dict()),
)


def default_config_of(cls: Any) -> EasyDict | None:
    """A copy of ``cls.default_config()``, or None when the class has no config of its own (nothing to check)."""
    fn = getattr(cls, "default_config", None)
    if cls is None or fn is None:
        return None
    cfg = fn()
    if not isinstance(cfg, Mapping):
        raise TypeError(f"{cls.__qualname__}.default_config() must return a dict/EasyDict, got {type(cfg).__name__}")
    if not (set(cfg) - {"cfg_type"}):
        return None
    return EasyDict(copy.deepcopy(dict(cfg)))


def open_keys_of(cls: Any) -> tuple[str, ...]:
    keys = getattr(cls, "open_config_keys", ())
    if isinstance(keys, str) or not all(isinstance(k, str) for k in keys):
        raise TypeError(f"{cls.__qualname__}.open_config_keys must be a tuple of dotted paths, got {keys!r}")
    return tuple(keys)


def check_import_names(value: Any, where: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ConfigError(
            f"{where}: import_names must be a list of module names, e.g. ['my_pkg.my_env'], got {value!r}"
        )
    return list(value)


def lookup_type(part: Part, name: Any, import_names: Iterable[str], where: str) -> type:
    """Import ``import_names``, then return ``part.registry[name]`` (the installed plugins are imported on a miss)."""
    if not isinstance(name, str) or not name:
        raise ConfigError(f"{where}: expected a registered {part.registry.name} type name (a str), got {name!r}")
    import_module(import_names)
    return part.registry.get(name, where=where)


def registered_name(registry: Registry, cls: Any) -> str | None:
    """The first name ``cls`` is registered under (None if it is not registered)."""
    for name, obj in registry.items():
        if obj is cls:
            return name
    return None


def get_path(cfg: Mapping, path: str) -> Any:
    node: Any = cfg
    for key in path.split("."):
        if not isinstance(node, Mapping) or key not in node:
            return None
        node = node[key]
    return node


def set_path(cfg: dict, path: str, value: Any) -> None:
    *parents, last = path.split(".")
    node = cfg
    for key in parents:
        if not isinstance(node.get(key), Mapping):
            node[key] = EasyDict()
        node = node[key]
    node[last] = value
