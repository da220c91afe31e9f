"""``compile_config``: component defaults + create_config types + the user's main_config, validated."""
from __future__ import annotations

import copy
import difflib
import os
import shutil
import sys
from dataclasses import dataclass
from typing import Any, Callable, Mapping

from easydict import EasyDict

from ding.utils import ConfigError, deep_merge_dicts
from ding.utils.tracking import LOGGER_CONFIG

from .components import (
    BASE_RANGES,
    ENV_COMMON_CONFIG,
    PARTS,
    PARTS_BY_NAME,
    POLICY_TEMPLATE,
    Part,
    check_import_names,
    default_config_of,
    get_path,
    lookup_type,
    open_keys_of,
    registered_name,
    set_path,
)
from .exp_dir import announce_exp_dir, claim_exp_dir
from .ranges import find_range_problems, ranges_of, undeclared_paths
from .validation import find_config_problems, format_problems
from .writer import save_config, save_config_formatted


class _RegistryDefault:
    """Default of ``compile_config``'s ``learner``/``evaluator``: a registry entry, looked up when needed.

    ``ding.config`` sits below ``ding.worker`` (imports only go down), so the classes cannot be named in the signature.
    """

    def __init__(self, part: str, type_name: str) -> None:
        self.part, self.type_name = part, type_name

    def __repr__(self) -> str:
        return f"<{PARTS_BY_NAME[self.part].registry.name} registry '{self.type_name}'>"


DEFAULT_LEARNER = _RegistryDefault("learner", "base")
DEFAULT_EVALUATOR = _RegistryDefault("evaluator", "interaction")


def compile_config(
    cfg: Mapping,
    env_manager: type | None = None,
    policy: type | None = None,
    learner: Any = DEFAULT_LEARNER,
    collector: type | None = None,
    evaluator: Any = DEFAULT_EVALUATOR,
    buffer: type | None = None,
    env: Any = None,
    reward_model: type | None = None,
    world_model: type | None = None,
    seed: int = 0,
    auto: bool = False,
    create_cfg: Mapping | None = None,
    save_cfg: bool = True,
    save_path: str = "total_config.py",
    renew_dir: bool = True,
    *,
    source: str | None = None,
    parts: tuple[Part, ...] = PARTS,
    extra_defaults: Mapping | None = None,
    system_cfg: Callable[[EasyDict], Mapping] | None = None,
) -> EasyDict:
    """Merge the components' default configs, the create_config types and ``cfg``; validate; save; return the result.

    With ``auto=True`` each component class comes from its registry by the type named in ``create_cfg`` (a class
    passed as an argument still wins). ``learner``/``evaluator`` default to the ``base`` learner and the
    ``interaction`` evaluator; pass None to leave a component out. ``source`` names the config file in error messages.
    Neither ``cfg`` nor ``create_cfg`` is changed. See docs/config.md.

    ``parts`` (the component kinds and their registries) and ``extra_defaults`` (more valid keys with their
    defaults) let parallel mode compile with its own collector and commander registries; ``system_cfg(compiled)``
    builds the parallel system config once the experiment directory is final, and it is saved with the rest.
    """
    src = os.fspath(source) if source else "<dict>"
    given = dict(env=env, env_manager=env_manager, policy=policy, learner=learner, collector=collector,
                 evaluator=evaluator, replay_buffer=buffer, commander=None, reward_model=reward_model,
                 world_model=world_model)
    result = _compile(cfg, given, seed, auto, create_cfg, src, parts, extra_defaults)
    if save_cfg:
        result.save(save_path, renew_dir=renew_dir, system_cfg=system_cfg)
    elif system_cfg is not None:
        result.system = system_cfg(result.cfg)
    return result.cfg


def compile_run_config(cfg: Mapping, create_cfg: Mapping, seed: int = 0, *,
                       source: str | None = None) -> CompiledConfig:
    """``compile_config(cfg, auto=True, create_cfg=create_cfg, seed=seed)`` that writes nothing yet.

    A pipeline claims and locks the run directory, and validates a resume, before it calls ``.save()``: a refused or
    failed run leaves no file behind.
    """
    given = dict.fromkeys(PARTS_BY_NAME) | dict(learner=DEFAULT_LEARNER, evaluator=DEFAULT_EVALUATOR)
    return _compile(cfg, given, seed, True, create_cfg, os.fspath(source) if source else "<dict>")


@dataclass
class CompiledConfig:
    """A compiled config and the create_config recorded beside it (each part's type and import_names)."""

    cfg: EasyDict
    create_cfg: EasyDict
    system: Mapping | None = None  # parallel mode's system config, saved beside the others

    def save(self, save_path: str = "total_config.py", renew_dir: bool = False,
             system_cfg: Callable[[EasyDict], Mapping] | None = None) -> None:
        """Write ``./<cfg.exp_name>/<save_path>`` and its ``formatted_`` copy (atomically).

        ``renew_dir=True`` first claims the directory (:func:`claim_exp_dir`): an existing one is left alone and
        ``cfg.exp_name`` becomes the ``<exp_name>_<YYMMDD_HHMMSS>`` directory created instead.
        """
        asked = self.cfg.exp_name
        if renew_dir:  # announced below, once the config is in it: a failed save removes the claimed directory
            self.cfg.exp_name = claim_exp_dir(asked, announce=False)
        try:
            if system_cfg is not None:  # built once the directory is final (its paths may live under it)
                self.system = system_cfg(self.cfg)
            path = os.path.join(self.cfg.exp_name, save_path)
            formatted = os.path.join(os.path.dirname(path), "formatted_" + os.path.basename(path))
            save_config(self.cfg, path, create_cfg=self.create_cfg, system_cfg=self.system)
            save_config_formatted(self.cfg, formatted, create_cfg=self.create_cfg, system_cfg=self.system)
        except BaseException:
            if renew_dir:
                shutil.rmtree(self.cfg.exp_name, ignore_errors=True)  # (created just now, by this claim)
                self.cfg.exp_name = asked
            raise
        if renew_dir:
            announce_exp_dir(asked, self.cfg.exp_name)


def _compile(cfg: Mapping, given: dict[str, Any], seed: int, auto: bool, create_cfg: Mapping | None,
             src: str, parts: tuple[Part, ...] = PARTS, extra_defaults: Mapping | None = None) -> CompiledConfig:
    by_name = {p.name: p for p in parts}
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"compile_config: main_config must be a dict or EasyDict, got {type(cfg).__name__} ({src})")
    if create_cfg is not None and not isinstance(create_cfg, Mapping):
        raise ConfigError(f"compile_config: create_cfg must be a dict or EasyDict, got {type(create_cfg).__name__}")
    user_main = EasyDict(copy.deepcopy(dict(cfg)))
    user_create = EasyDict(copy.deepcopy(dict(create_cfg or {})))

    problems = _create_section_problems(user_create, src, by_name)
    if problems:
        raise ConfigError(format_problems(problems))
    if auto:
        if create_cfg is None:
            raise ConfigError("compile_config(auto=True) needs create_cfg (the config file's create_config) to know "
                              "which env, policy, ... types to use")
        classes, names = _auto_classes(user_main, user_create, given, src, parts)
    else:
        classes, names = {}, {}
        for name, value in given.items():
            if isinstance(value, _RegistryDefault):
                value, names[name] = _resolve_default(value, by_name), value.type_name
            classes[name] = value
        for part in parts:  # a part no argument names (the league): found by its section, as in auto mode
            if part.optional and part.name not in given:
                _add_optional_class(part, user_main, user_create, src, classes, names)

    types = _types(classes, names, user_create, parts)
    schema, open_paths, closed_paths = _schema(classes, types, names, user_main, user_create, seed, parts)
    if extra_defaults:
        schema = _merge_under(extra_defaults, schema)
    problems = find_config_problems(user_main, schema, open_paths, src, closed_paths=closed_paths)
    for name, section in user_create.items():
        part = by_name[name]
        problems += find_config_problems(section, get_path(schema, part.place) or {}, open_paths, src,
                                         closed_paths=closed_paths, path=part.place, shown_path=f"create_config.{name}")
    if problems:
        raise ConfigError(format_problems(problems))

    compiled = schema
    for name, section in user_create.items():
        place = by_name[name].place
        set_path(compiled, place, deep_merge_dicts(get_path(compiled, place) or {}, section))
    compiled = deep_merge_dicts(compiled, user_main)
    compiled.seed = seed
    compiled.exp_name = user_main.get("exp_name") or "default_experiment"
    problems = _range_problems(compiled, classes, src, parts) + _exp_name_problems(compiled.exp_name, src)
    if problems:
        raise ConfigError(format_problems(problems))
    evaluator_cfg = get_path(compiled, "policy.eval.evaluator")
    if isinstance(evaluator_cfg, dict):  # env is the one place to set these; the evaluator reads them
        evaluator_cfg["stop_value"] = compiled.env.stop_value
        evaluator_cfg["n_episode"] = compiled.env.n_evaluator_episode

    return CompiledConfig(compiled, types)


def _range_problems(compiled: EasyDict, classes: Mapping[str, Any], src: str,
                   parts: tuple[Part, ...] = PARTS) -> list[str]:
    """Every value outside the range its component declares (``config_ranges``, see ranges.py), by key path."""
    problems = find_range_problems(compiled, BASE_RANGES, source=src)
    for part in parts:
        cls = classes.get(part.name)
        ranges = ranges_of(cls)
        if not ranges:
            continue
        assert cls is not None  # ranges_of(None) is empty
        missing = undeclared_paths(ranges, default_config_of(cls) or {})
        if missing:
            raise TypeError(f"{cls.__qualname__}.config_ranges names {missing}, which are not keys of its config")
        section = get_path(compiled, part.place)
        if isinstance(section, Mapping):
            problems += find_range_problems(section, ranges, part.place, src)
    return problems


def _exp_name_problems(exp_name: Any, src: str) -> list[str]:
    """The run directory ``./<exp_name>/`` must be creatable: no part of the path may be an existing file."""
    if not isinstance(exp_name, str):
        return [f"exp_name: expected str (the run directory), got {type(exp_name).__name__} {exp_name!r} (in {src})"]
    path = os.path.normpath(exp_name)
    parts = [path]
    while os.path.dirname(parts[-1]) not in ("", parts[-1]):
        parts.append(os.path.dirname(parts[-1]))
    for p in reversed(parts):
        if os.path.exists(p) and not os.path.isdir(p):
            return [f"exp_name: {exp_name!r} needs the directory ./{path}/, but '{p}' is a file (in {src}); "
                    "choose another exp_name (or --exp-name)"]
    return []


def _create_section_problems(user_create: Mapping, src: str, by_name: Mapping[str, Part]) -> list[str]:
    problems = []
    for name, section in user_create.items():
        if name not in by_name:
            known = [n for n, p in by_name.items() if p.type_key == "type"]
            close = difflib.get_close_matches(str(name), known, n=1, cutoff=0.6)
            hint = f"did you mean '{close[0]}'?" if close else f"known sections: {', '.join(known)}"
            problems.append(f"create_config.{name}: unknown section (in {src}); {hint}")
        elif by_name[name].type_key != "type":
            part = by_name[name]
            problems.append(f"create_config.{name}: not a create_config section (in {src}); name the {name} type in "
                            f"main_config's {part.place}.{part.type_key}")
        elif not isinstance(section, Mapping):
            problems.append(f"create_config.{name}: expected a dict like dict(type='...', import_names=[...]), got "
                            f"{type(section).__name__} {section!r} (in {src})")
    return problems


def _resolve_default(value: _RegistryDefault, by_name: Mapping[str, Part]) -> Any:
    part = by_name[value.part]
    where = (f"compile_config's default {value.part} (pass {value.part}=None to compile without one, "
             f"or a {value.part} class)")
    return lookup_type(part, value.type_name, (), where)


def _type_name(part: Part, main: Mapping, create: Mapping, src: str) -> tuple[Any, str | None, list[str]]:
    """The type a config names for ``part`` (create_config or main_config), where it was found, its import_names."""
    section = create.get(part.name) or {}
    main_section = get_path(main, part.place)
    main_section = main_section if isinstance(main_section, Mapping) else {}
    t_create, t_main = section.get("type"), main_section.get(part.type_key)
    if t_create is not None and t_main is not None and t_create != t_main:
        raise ConfigError(
            f"create_config.{part.name}.type is {t_create!r} but {part.place}.type is {t_main!r} (in {src}); "
            "name the type once (in create_config) or make both agree"
        )
    imports = check_import_names(section.get("import_names"), f"create_config.{part.name}.import_names (in {src})")
    imports += check_import_names(main_section.get("import_names"), f"{part.place}.import_names (in {src})")
    if t_create is not None:
        return t_create, f"create_config.{part.name}.type (in {src})", imports
    if t_main is not None:
        return t_main, f"{part.place}.{part.type_key} (in {src})", imports
    return None, None, imports


def _add_optional_class(part: Part, main: Mapping, create: Mapping, src: str, classes: dict[str, Any],
                        names: dict[str, str]) -> None:
    """The class of an optional part (None unless ``main`` has its section): the type it names, else the default."""
    name, where, imports = _type_name(part, main, create, src)
    if not isinstance(get_path(main, part.place), Mapping) or (name is None and part.default_type is None):
        classes[part.name] = None
        return
    if name is None:
        name, where = part.default_type, f"default {part.name} type of {part.place} (in {src})"
    assert where is not None
    classes[part.name] = lookup_type(part, name, imports, where)
    names[part.name] = name


def _auto_classes(main: Mapping, create: Mapping, given: dict[str, Any], src: str,
                  parts: tuple[Part, ...]) -> tuple[dict[str, Any], dict[str, str]]:
    """The class of every part (None: left out) and the registry name each was found under."""
    classes: dict[str, Any] = {}
    names: dict[str, str] = {}
    for part in parts:
        explicit = given.get(part.name)
        if explicit is not None and not isinstance(explicit, _RegistryDefault):
            classes[part.name] = explicit  # a class passed by the caller wins over the registry
            continue
        if part.optional:
            _add_optional_class(part, main, create, src, classes, names)
            continue
        name, where, imports = _type_name(part, main, create, src)
        if name is None:
            name = _fallback_type(part, main, classes.get("policy"))
            where = f"default {part.name} type (in {src}; set create_config.{part.name}.type to choose one)"
        if name is None and part.name == "policy":
            raise ConfigError(f"compile_config(auto=True): no policy type; set create_config.policy.type (in {src})")
        if name is None:
            classes[part.name] = None
            continue
        assert where is not None  # _type_name says where it found a name; a fallback name's place is set above
        classes[part.name] = lookup_type(part, name, imports, where)
        names[part.name] = name
    return classes, names


def _fallback_type(part: Part, main: Mapping, policy_cls: Any) -> str | None:
    """The type of a part no config names: a policy's preference, else the part's default."""
    if part.name == "collector":
        return getattr(policy_cls, "default_collector_type", None) or part.default_type
    if part.name == "replay_buffer":
        policy_default = default_config_of(policy_cls) or EasyDict()
        on_policy = get_path(main, "policy.on_policy")
        if on_policy is None:
            on_policy = policy_default.get("on_policy", False)
        if on_policy:
            return None  # on-policy algorithms train on fresh data: no replay buffer
        return get_path(policy_default, "other.replay_buffer.type") or part.default_type
    return part.default_type


def _types(classes: Mapping[str, Any], names: Mapping[str, str], user_create: Mapping,
           parts: tuple[Part, ...]) -> EasyDict:
    """The create_config to save: per part, its type (as the config named it, or its registered name) + import_names."""
    types = EasyDict()
    for part in parts:
        if part.type_key != "type":  # named in the main config only (the league's league_type)
            continue
        section = user_create.get(part.name) or {}
        cls = classes.get(part.name)
        named = section.get("type")
        name = names.get(part.name)
        if name is None and cls is not None:  # a class given by the caller: its name, preferably as the config says
            same = isinstance(named, str) and part.registry.get(named, None) is cls
            name = named if same else registered_name(part.registry, cls)
        if name is None:
            name = named
        if name is None:
            continue
        entry = EasyDict(type=name)
        module = getattr(cls, "__module__", None) or "__main__"
        if section.get("import_names"):
            entry.import_names = list(section["import_names"])
        elif cls is not None and not module.startswith("ding.") and module != "__main__" and module in sys.modules:
            entry.import_names = [module]  # so that the saved config finds the class in a new process (a class made
            # by exec() in a namespace names a module that was never imported: nothing to name)
        types[part.name] = entry
    return types


def _schema(classes: Mapping[str, Any], types: Mapping, names: Mapping[str, str], user_main: Mapping,
            user_create: Mapping, seed: int, parts: tuple[Part, ...]) -> tuple[EasyDict, list[str], list[str]]:
    """The merged defaults (the schema user keys are checked against) and the open / closed section paths."""
    schema = EasyDict(env=EasyDict(), policy=EasyDict())
    open_paths: list[str] = []
    closed_paths: list[str] = []
    for part in parts:
        cls = classes.get(part.name)
        default = default_config_of(cls)
        if default is None:
            open_paths.append(part.place)  # unknown or schema-less component: its section is free-form
            continue
        closed_paths.append(part.place)
        open_paths += [f"{part.place}.{key}" for key in open_keys_of(cls)]
        # The enclosing component's values win over the nested one's defaults (a policy may tune its learner).
        set_path(schema, part.place, deep_merge_dicts(default, get_path(schema, part.place) or {}))
    base = EasyDict(exp_name="default_experiment", seed=seed, env=ENV_COMMON_CONFIG, policy=POLICY_TEMPLATE,
                    logger=LOGGER_CONFIG)  # the training view's loggers (docs/tracking.md)
    schema = _merge_under(base, schema)
    user_logger = user_main.get("logger")
    for name in (user_logger.get("types") or []) if isinstance(user_logger, Mapping) else []:
        if isinstance(name, str) and name not in LOGGER_CONFIG:  # a plugin tracker's section: its own keys
            open_paths.append(f"logger.{name}")
    schema = EasyDict(exp_name=schema.pop("exp_name"), seed=schema.pop("seed"), **schema)
    for part in parts:
        section = get_path(schema, part.place)
        if not isinstance(section, dict):  # sections of the EasyDict schema are EasyDicts
            continue
        if part.type_key != "type":
            if part.name in names:
                section[part.type_key] = names[part.name]
            continue
        if part.name in types:
            section.update(copy.deepcopy(types[part.name]))  # type (+ import_names)
        elif "type" not in section and ("type" in (user_create.get(part.name) or {})
                                        or "type" in (get_path(user_main, part.place) or {})):
            section["type"] = None  # a type key is valid at every component's section
    evaluator_cfg = schema.policy.eval.evaluator
    evaluator_cfg.setdefault("stop_value", schema.env.stop_value)
    evaluator_cfg.setdefault("n_episode", schema.env.n_evaluator_episode)
    return schema, open_paths, closed_paths


def _merge_under(base: Mapping, cfg: Mapping) -> EasyDict:
    """``cfg`` over ``base`` (a new dict): ``cfg``'s values win, and its keys come first so a component's own
    config keeps its order."""
    merged = EasyDict(copy.deepcopy(dict(cfg)))
    for key, value in base.items():
        if key not in merged:
            merged[key] = copy.deepcopy(value)
        elif isinstance(value, Mapping) and isinstance(merged[key], Mapping):
            merged[key] = _merge_under(value, merged[key])
    return merged
