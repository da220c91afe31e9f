"""Parallel mode's short knob list (issue 37): docs/parallel.md's one table of the keys a user sets is short, and each
documented default is what ``compile_config_parallel`` gives the shipped config; every removed key is a config error
naming it and what replaced it."""
from __future__ import annotations

import ast
import copy
import os
import re
from typing import Any

import pytest

from ding.config import compile_config_parallel
from ding.config.parallel import REMOVED_MAIN_KEYS, REMOVED_SYSTEM_KEYS
from ding.utils import ConfigError, deep_merge_dicts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MAX_KEYS = 26
# rows whose default is not one value: the role entries, laid out per role by the compile step
GENERATED = {"system_config.learner0"}


def user_table() -> list[tuple[str, str]]:
    """``(key, default)`` of each row of the first table under '### The keys' in docs/parallel.md."""
    with open(os.path.join(ROOT, "docs", "parallel.md"), encoding="utf-8") as f:
        text = f.read()
    section = text.split("\n### The keys\n", 1)[1].split("\n### ", 1)[0]
    rows = []
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")] if line.startswith("|") else []
        if len(cells) < 3 or cells[0] in ("key", "---"):
            if rows and not cells:
                break  # the end of the table
            continue
        key = re.match(r"`([^`]+)`", cells[0])
        default = re.fullmatch(r"`(.+)`", cells[1])
        assert key, f"docs/parallel.md, The keys: {cells[0]!r} is not a `key`"
        rows.append((key.group(1), default.group(1) if default else cells[1]))
    return rows


def _value(text: str) -> Any:
    """A documented default: a Python literal, or ``dict(k=literal, ...)``."""
    node = ast.parse(text, mode="eval").body
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "dict" and not node.args:
        return {kw.arg: ast.literal_eval(kw.value) for kw in node.keywords}
    return ast.literal_eval(node)


def _shipped():
    from dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config import (
        create_config,
        main_config,
        system_config,
    )

    return tuple(copy.deepcopy(c) for c in (main_config, create_config, system_config))


def _get(tree: Any, path: list[str]) -> Any:
    for part in path:
        if not isinstance(tree, dict) or part not in tree:
            raise KeyError(".".join(path))
        tree = tree[part]
    return tree


def test_the_user_table_is_short_and_each_default_is_the_compiled_one(in_tmp_dir):
    """The shipped config's own values (e.g. send_policy_freq=10) are not defaults: those keys are skipped."""
    from ding.parallel.launch.dist import role_config
    from ding.worker import FlaskFileSystemLearner

    rows = user_table()
    assert 20 <= len(rows) <= MAX_KEYS, f"docs/parallel.md lists {len(rows)} keys a user sets (at most {MAX_KEYS})"
    main, create, system = _shipped()
    shipped = {"main_config": main, "system_config": system}
    cfg = compile_config_parallel(main, create, system, save_cfg=False)
    compiled = {"main_config": cfg.main, "system_config": cfg.system}
    learner = deep_merge_dicts(FlaskFileSystemLearner.default_config(), role_config(cfg.system, "learner", "learner0"))
    checked = []
    for key, default in rows:
        section, *path = key.split(".")
        assert section in compiled, f"{key}: a key of main_config or system_config"
        if key in GENERATED:
            assert default == "generated", (key, default)
            continue
        try:
            _get(shipped[section], path)
            continue  # set by the shipped config
        except KeyError:
            pass
        role = section == "system_config" and re.fullmatch(r"learner\d+", path[0]) is not None
        got = _get(learner, path[1:]) if role else _get(compiled[section], path)
        assert _value(default) == got, f"docs/parallel.md: {key} defaults to {default}; compiled: {got!r}"
        checked.append(key)
    assert len(checked) >= 15, checked  # most rows are checked, not skipped


def test_no_removed_key_is_in_the_user_table_or_set_by_a_shipped_config():
    keys = {k for k, _ in user_table()}
    removed = {f"system_config.{k}" for k in REMOVED_SYSTEM_KEYS} | {f"main_config.{k}" for k in REMOVED_MAIN_KEYS}
    assert not keys & removed
    leaves = {k.rsplit(".", 1)[-1] for k in [*REMOVED_SYSTEM_KEYS, *REMOVED_MAIN_KEYS]}
    for top in ("config", "dizoo"):
        for base, _, files in os.walk(os.path.join(ROOT, top)):
            for name in files:
                if name.endswith(".py") and "parallel" in base:
                    with open(os.path.join(base, name), encoding="utf-8") as f:
                        text = f.read()
                    found = [k for k in leaves if re.search(rf"\b{k}\s*=", text)]
                    assert not found, f"{os.path.join(base, name)} sets removed keys {found}"


def _set(tree: dict, path: str, value: Any) -> None:
    *parents, leaf = path.split(".")
    for part in parents:
        tree = tree.setdefault(part, {})
    tree[leaf] = value


@pytest.mark.parametrize("key", sorted(REMOVED_SYSTEM_KEYS))
def test_each_removed_system_key_is_an_error_naming_it_and_its_replacement(in_tmp_dir, key):
    main, create, system = _shipped()
    shown = key.replace("learnerN.", "learner0.").replace("collectorN.", "collector1.")
    _set(system, shown, 1)
    with pytest.raises(ConfigError) as e:
        compile_config_parallel(main, create, system, save_cfg=False, source="cfg.py")
    text = str(e.value)
    assert text == (f"system_config.{shown}: this key was removed ({REMOVED_SYSTEM_KEYS[key]}); delete it "
                    "(in cfg.py)"), text


@pytest.mark.parametrize("key", sorted(REMOVED_MAIN_KEYS))
def test_each_removed_main_key_is_an_error_naming_it_and_its_replacement(in_tmp_dir, key):
    main, create, system = _shipped()
    _set(main, key, 1)
    with pytest.raises(ConfigError) as e:
        compile_config_parallel(main, create, system, save_cfg=False, source="cfg.py")
    text = str(e.value)
    assert text == f"main_config.{key}: this key was removed ({REMOVED_MAIN_KEYS[key]}); delete it (in cfg.py)", text


def test_every_removed_key_is_in_the_docs_removed_keys_table():
    with open(os.path.join(ROOT, "docs", "parallel.md"), encoding="utf-8") as f:
        text = f.read()
    table = text.split("**Removed keys.**", 1)[1].split("\n\n", 2)[1]
    for key in [*REMOVED_SYSTEM_KEYS, *REMOVED_MAIN_KEYS]:
        leaf = key.rsplit(".", 1)[-1]
        assert f"{leaf}`" in table, f"docs/parallel.md, Removed keys: {key} is missing"


def test_learner_task_space_is_accepted_for_di_engine_configs_and_must_be_1(in_tmp_dir):
    main, create, system = _shipped()
    main.policy.other.commander.learner_task_space = 1
    compiled = compile_config_parallel(main, create, system, save_cfg=False)
    assert compiled.main.policy.other.commander.learner_task_space == 1
    main.policy.other.commander.learner_task_space = 2
    with pytest.raises(ConfigError, match=r"policy.other.commander.learner_task_space: must be in \[1, 1\], got 2"):
        compile_config_parallel(main, create, system, save_cfg=False)
