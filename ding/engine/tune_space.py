"""A hyperparameter search space: distributions over dotted config keys, read from a small Python file and checked
against the config it tunes before any trial runs (docs/tuning.md).

A space file defines ``space``, a dict from a key of the main config (``'policy.learn.learning_rate'``) to an Optuna
distribution (``FloatDistribution(1e-4, 1e-2, log=True)``, ``IntDistribution(32, 256, log=True)``,
``CategoricalDistribution([50, 100, 200])``) or, for short, a list of choices.
"""
from __future__ import annotations

import copy
import difflib
import os
import runpy
from collections.abc import Mapping
from typing import Any

from easydict import EasyDict

from ding.config import compile_run_config
from ding.config.components import get_path, set_path
from ding.utils import ConfigError


def load_space(source: str | os.PathLike | Mapping[str, Any]) -> dict[str, Any]:
    """The space of a file's ``space`` dict (or of a dict given as is), each value an Optuna distribution."""
    from optuna.distributions import BaseDistribution, CategoricalDistribution

    where = "the search space"
    if isinstance(source, Mapping):
        raw = dict(source)
    else:
        path = os.fspath(source)
        where = f"space file '{path}'"
        if not os.path.isfile(path):
            raise ConfigError(f"{where} not found (looked for {os.path.abspath(path)})")
        try:
            namespace = runpy.run_path(path, run_name="ding_tune_space")
        except SyntaxError as e:
            raise ConfigError(f"{where}, line {e.lineno}: syntax error ({e.msg})") from e
        if not isinstance(namespace.get("space"), Mapping):
            raise ConfigError(f"{where} defines no `space` dict; write space = {{'policy.learn.learning_rate': "
                              "FloatDistribution(1e-4, 1e-2, log=True), ...}")
        raw = dict(namespace["space"])
    if not raw:
        raise ConfigError(f"{where}: the space is empty; give at least one config key and its distribution")
    space: dict[str, Any] = {}
    for key, dist in raw.items():
        if not isinstance(key, str) or not key:
            raise ConfigError(f"{where}: keys are dotted config keys such as 'policy.learn.batch_size', got {key!r}")
        if isinstance(dist, (list, tuple)):
            if not dist:
                raise ConfigError(f"{where}: '{key}' has an empty list of choices")
            dist = CategoricalDistribution(list(dist))
        if not isinstance(dist, BaseDistribution):
            raise ConfigError(f"{where}: '{key}' must be an Optuna distribution (FloatDistribution, IntDistribution, "
                              f"CategoricalDistribution) or a list of choices, got {type(dist).__name__} {dist!r}")
        space[key] = dist
    return space


def apply_params(main_cfg: Mapping[str, Any], params: Mapping[str, Any]) -> EasyDict:
    """A copy of the user's main config with each dotted key of ``params`` set."""
    cfg = EasyDict(copy.deepcopy(dict(main_cfg)))
    for key, value in params.items():
        set_path(cfg, key, value)
    return cfg


def check_space(space: Mapping[str, Any], main_cfg: Mapping[str, Any], create_cfg: Mapping[str, Any],
                source: str | None, space_source: str) -> None:
    """Every key of ``space`` must be a key of the compiled config, and the config must compile with the ends of
    every distribution (its low and high values, each choice): a typo or a value of the wrong type is one
    :class:`ConfigError` naming the key and the file, before any trial runs."""
    compiled = compile_run_config(main_cfg, create_cfg, source=source).cfg
    for key in space:
        parent, _, leaf = key.rpartition(".")
        node = get_path(compiled, parent) if parent else compiled
        if isinstance(node, Mapping) and leaf in node and not isinstance(node[leaf], Mapping):
            continue
        if isinstance(node, Mapping) and leaf in node:
            raise ConfigError(f"{space_source}: '{key}' is a section of the config, not a value; tune one of its "
                              f"keys ({', '.join(sorted(map(str, node[leaf]))[:8])})")
        known = sorted(str(k) for k in node) if isinstance(node, Mapping) else []
        close = difflib.get_close_matches(leaf, known, n=1)
        hint = (f"did you mean '{parent + '.' if parent else ''}{close[0]}'?" if close
                else f"'{parent or 'the config'}' has no such key" if known else f"'{parent}' is not a section")
        raise ConfigError(f"{space_source}: '{key}' is not a key of the config ({source or '<dict>'}); {hint}")
    for label, params in _corners(space).items():
        try:
            compile_run_config(apply_params(main_cfg, params), create_cfg, source=source)
        except ConfigError as e:
            raise ConfigError(f"{space_source}: the config does not compile with the space's {label} values "
                              f"{params}: {e}") from e


def _corners(space: Mapping[str, Any]) -> dict[str, dict[str, Any]]:
    """The space's lowest and highest values, and (per categorical key) every choice."""
    from optuna.distributions import CategoricalDistribution

    low: dict[str, Any] = {}
    high: dict[str, Any] = {}
    for key, dist in space.items():
        if isinstance(dist, CategoricalDistribution):
            low[key], high[key] = dist.choices[0], dist.choices[-1]
        else:
            low[key], high[key] = dist.low, dist.high
    corners = {"lowest": low, "highest": high}
    for key, dist in space.items():
        if isinstance(dist, CategoricalDistribution):
            for i, choice in enumerate(dist.choices[1:-1], 1):
                corners[f"{key} choice {i}"] = {**low, key: choice}
    return corners
