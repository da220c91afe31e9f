"""The house rules of docs/architecture.md, read from the source: an import only goes down the layers, and nothing
under ding/ imports the env zoo (dizoo), the experiment configs (config) or the examples (entry).

Every import counts: top-level, inside a function (lazy), under ``if TYPE_CHECKING``, and a module named by a string
(``importlib.import_module('ding.worker')``, a tuple of module paths to import) -- an import by name is still an
import. Exceptions are listed in ``EXCEPTIONS`` with the reason.
"""
from __future__ import annotations

import ast
import functools
import os
import re
import sys
from dataclasses import dataclass

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Lower floors first (docs/architecture.md). A module may import its own layer and the ones before it.
LAYERS = ("utils", "torch_utils", "config", "envs", "model", "rl_utils", "policy", "interaction", "league", "worker",
          "data", "engine", "parallel", "entry")
# Top-level packages of this repository that ding must never import.
FORBIDDEN = ("dizoo", "config", "entry")
# The two modules of the ``ding`` package itself: ``__init__`` holds the version (the bottom) and two lazy doors to
# the top (the exceptions below); ``__main__`` is ``python -m ding``, the command's door (the top).
PACKAGE_MODULES = {"ding": "utils", "ding.__main__": "entry"}
# (importing module, imported module) -> why it is allowed.
EXCEPTIONS: dict[tuple[str, str], str] = {
    ("ding", "ding.entry.trainer"): "ding.Trainer, imported on first attribute access only (no import-time cycle)",
    ("ding", "ding.entry.deploy"): "ding.load_policy, imported on first attribute access only",
    ("ding.utils", "ding.worker.replay_buffer"): "DI-engine's ding.utils.SumSegmentTree / MinSegmentTree, imported on "
                                                 "first attribute access only",
}

# Parallel mode's wing (ding/parallel): besides its own modules, only its doors import it, and the re-export modules
# that keep DI-engine's import paths (the table 'Import paths' in docs/parallel.md, read below).
PARALLEL_DOORS = {"ding.entry.parallel_entry": "parallel_pipeline / ding -m parallel",
                  "ding.entry.dist_entry": "ding -m dist"}


@functools.lru_cache(maxsize=1)
def reexport_modules() -> dict[str, bool]:
    """The re-export modules of docs/parallel.md's 'Import paths' table: module -> whether it is a package that also
    holds serial names (and imports the parallel ones lazily)."""
    with open(os.path.join(ROOT, "docs", "parallel.md"), encoding="utf-8") as f:
        text = f.read()
    table = text.split("### Import paths", 1)[1].split("\n#", 1)[0]
    rows = re.findall(r"^\| `(ding[\w.]*)` \| (.*) \|$", table, flags=re.M)
    return {module: "lazily" in what for module, what in rows}


# ding/entry holds the doors only (functions, the CLI, the Trainer); the run engine they share (builder use, loops, run
# state, checks, views, the coordinator driver) lives in ding/engine. A new module in ding/entry is added here on
# purpose, with the door it is.
ENTRY_MODULES = {
    "ding.entry": "the lazy names (Trainer, serial_pipeline, ...)",
    "ding.entry.cli": "the ding command", "ding.entry.cli_modes": "its -m modes",
    "ding.entry.serial_entry": "serial_pipeline", "ding.entry.serial_entry_onpolicy": "serial_pipeline_onpolicy",
    "ding.entry.serial_entry_battle": "serial_pipeline_battle / ding -m serial_battle",
    "ding.entry.trainer": "Trainer", "ding.entry.parallel_entry": "parallel_pipeline / ding -m parallel",
    "ding.entry.dist_entry": "ding -m dist", "ding.entry.application_entry": "eval",
    "ding.entry.deploy": "load_policy", "ding.entry.plot": "ding -m plot",
    "ding.entry.tune_entry": "tune / ding -m tune",
    "ding.entry.serial_entry_offline": "serial_pipeline_offline / collect_demo_data / ding -m serial_offline",
    "ding.entry.utils": "DI-engine's warm-up helpers (random_collect, mark_not_expert, mark_warm_up)",
}
# Modules that dispatch to the doors (and so import them).
DISPATCHERS = ("ding.entry", "ding.entry.cli", "ding.entry.cli_modes")
# (door, door) -> why one door may stand on another; every other door-to-door import is a breach.
DOOR_IMPORTS: dict[tuple[str, str], str] = {
    ("ding.entry.serial_entry", "ding.entry.trainer"): "serial_pipeline is a Trainer run to its end",
    ("ding.entry.serial_entry_onpolicy", "ding.entry.serial_entry"): "both serial pipelines share run_serial",
    ("ding.entry.tune_entry", "ding.entry.trainer"): "each trial of a search is a Trainer, round by round",
    ("ding.entry.serial_entry_offline", "ding.entry.trainer"): "serial_pipeline_offline is a Trainer run on a data set",
}

_MODULE_PATH = re.compile(r"[A-Za-z_]\w*(\.[A-Za-z_]\w*)+")


@dataclass(frozen=True)
class Import:
    module: str  # the importing module, e.g. ding.config.components
    target: str  # the imported module, e.g. ding.worker
    line: int
    how: str  # 'import', 'lazy import' (inside a function) or 'by name' (a string)


def _module_name(path: str) -> str:
    rel = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
    return rel[: -len(".__init__")] if rel.endswith(".__init__") else rel


def imports_of(source: str, module: str, is_package: bool = False) -> list[Import]:
    """Every module ``source`` imports: statements anywhere in the file, and dotted module paths in string literals
    (the way a module is imported by name), docstrings excepted."""
    tree = ast.parse(source)
    package = module if is_package else module.rpartition(".")[0]
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    found: list[Import] = []

    def visit(node: ast.AST, in_function: bool) -> None:
        how = "lazy import" if in_function else "import"
        if isinstance(node, ast.Import):
            found.extend(Import(module, a.name, node.lineno, how) for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if node.module is None:  # from . import a, b: the submodules
                found.extend(Import(module, f"{target}.{a.name}", node.lineno, how) for a in node.names)
            else:
                found.append(Import(module, target, node.lineno, how))
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
              and _MODULE_PATH.fullmatch(node.value) and _is_module(node.value)):
            found.append(Import(module, node.value, node.lineno, "by name"))
        for child in ast.iter_child_nodes(node):
            visit(child, in_function or isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(tree, False)
    return found


def _is_module(dotted: str) -> bool:
    """Whether ``dotted`` names a module or package of this repository (not a logger name like 'ding.resume')."""
    if dotted.split(".")[0] not in ("ding", *FORBIDDEN):
        return False
    path = os.path.join(ROOT, *dotted.split("."))
    return os.path.isdir(path) or os.path.isfile(path + ".py")


def layer_of(module: str) -> str | None:
    if module in PACKAGE_MODULES:
        return PACKAGE_MODULES[module]
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and parts[0] == "ding" else None


def violations(imports: list[Import]) -> list[str]:
    """What breaks the rules, one line per import (the file, line, and which rule)."""
    problems = []
    for imp in imports:
        if (imp.module, imp.target) in EXCEPTIONS:
            continue
        where = f"{imp.module} (line {imp.line}, {imp.how})"
        top = imp.target.split(".")[0]
        if top in FORBIDDEN:
            problems.append(f"{where} imports {imp.target}: nothing under ding/ imports {top}/ (use a registry, a "
                            "config's import_names or a ding.plugins entry point)")
            continue
        if top != "ding":
            continue
        if imp.target.startswith("ding.parallel") and imp.module in reexport_modules():
            continue  # a re-export module of DI-engine's import path (checked by the test below)
        own, other = layer_of(imp.module), layer_of(imp.target)
        for layer, name in ((own, imp.module), (other, imp.target)):
            if layer not in LAYERS:
                problems.append(f"{where}: {name} is in no layer; add its package to LAYERS and docs/architecture.md")
        if own in LAYERS and other in LAYERS and LAYERS.index(other) > LAYERS.index(own):
            problems.append(f"{where} imports {imp.target}: ding/{own} sits below ding/{other}; an import only goes "
                            "down (move the shared piece down, or pass it in)")
    return problems


def door_violations(imports: list[Import]) -> list[str]:
    """Imports between two doors of ding/entry that are neither a dispatcher's nor listed in ``DOOR_IMPORTS``."""
    problems = []
    for imp in imports:
        if (imp.module in DISPATCHERS or not imp.module.startswith("ding.entry.")
                or not imp.target.startswith("ding.entry.") or (imp.module, imp.target) in DOOR_IMPORTS):
            continue
        problems.append(f"{imp.module} (line {imp.line}, {imp.how}) imports {imp.target}: one door does not stand on "
                        "another; move what they share into ding/engine")
    return problems


def _ding_imports() -> list[Import]:
    found = []
    for root, _, files in os.walk(os.path.join(ROOT, "ding")):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, encoding="utf-8") as f:
                    found += imports_of(f.read(), _module_name(path), is_package=name == "__init__.py")
    return found


def test_ding_keeps_its_layers_and_never_imports_the_zoo():
    imports = _ding_imports()
    assert len(imports) > 300  # the walk found the package
    assert violations(imports) == []


def test_every_exception_is_still_needed():
    imports = {(i.module, i.target) for i in _ding_imports()}
    assert [pair for pair in EXCEPTIONS if pair not in imports] == []
    assert [pair for pair in DOOR_IMPORTS if pair not in imports] == []


def test_entry_holds_only_the_doors_and_no_door_imports_another():
    entry_dir = os.path.join(ROOT, "ding", "entry")
    modules = {_module_name(os.path.join(root, f)) for root, _, files in os.walk(entry_dir) for f in files
               if f.endswith(".py")}
    assert sorted(modules - set(ENTRY_MODULES)) == [], "run-engine code belongs in ding/engine, not ding/entry"
    assert door_violations(_ding_imports()) == []


def test_the_door_check_catches_one_door_importing_another():
    source = "from .dist_entry import PARENT_PID_ENV\nfrom .trainer import Trainer\nfrom ding.engine import resume\n"
    found = door_violations(imports_of(source, "ding.entry.parallel_entry"))
    assert [p.split(":")[0] for p in found] == [
        "ding.entry.parallel_entry (line 1, import) imports ding.entry.dist_entry",
        "ding.entry.parallel_entry (line 2, import) imports ding.entry.trainer",
    ]
    assert door_violations(imports_of(source, "ding.entry.cli_modes")) == []


def test_the_checker_catches_each_kind_of_breach():
    source = '''
"""Docstrings may mention dizoo.classic_control or ding.worker freely."""
import dizoo.classic_control.cartpole.envs
from ding.worker import BaseLearner
from ..policy import DQNPolicy
from . import components

def lazy():
    from entry import cartpole_dqn_main
    import importlib
    importlib.import_module("ding.entry.cli")

HOMES = ("ding.envs", "ding.utils", "config.serial")
'''
    found = violations(imports_of(source, "ding.config.loader"))
    assert [p.split(":")[0] for p in found] == [
        "ding.config.loader (line 3, import) imports dizoo.classic_control.cartpole.envs",
        "ding.config.loader (line 4, import) imports ding.worker",
        "ding.config.loader (line 5, import) imports ding.policy",
        "ding.config.loader (line 9, lazy import) imports entry",
        "ding.config.loader (line 11, by name) imports ding.entry.cli",
        "ding.config.loader (line 13, by name) imports ding.envs",
        "ding.config.loader (line 13, by name) imports config.serial",
    ]
    assert "in no layer" in violations(imports_of("import ding.newpkg", "ding.utils.x"))[0]


def test_only_the_wing_its_doors_and_the_reexports_import_the_wing():
    reexports = reexport_modules()
    assert len(reexports) > 20  # the table was found
    outside = sorted({f"{i.module} (line {i.line}) imports {i.target}" for i in _ding_imports()
                      if (i.target == "ding.parallel" or i.target.startswith("ding.parallel."))
                      and not i.module.startswith("ding.parallel") and i.module not in PARALLEL_DOORS
                      and i.module not in reexports})
    assert outside == [], "only ding/parallel, its doors and the re-export modules import the wing"


def test_the_wing_check_catches_an_import_from_below():
    found = violations(imports_of("from ding.parallel.protocol import CollectTask\n", "ding.worker.builder"))
    assert [p.split(":")[0] for p in found] == ["ding.worker.builder (line 1, import) imports ding.parallel.protocol"]
    assert violations(imports_of("from ding.parallel.commanders.solo import SoloCommander\n",
                                 "ding.worker.coordinator.solo_parallel_commander")) == []


def _reexport_problems(module: str, lazy: bool) -> list[str]:
    path = os.path.join(ROOT, *module.split("."))
    path = os.path.join(path, "__init__.py") if os.path.isdir(path) else path + ".py"
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read())
    problems = [f"{module}: defines {n.name} (line {n.lineno}); a re-export module only imports"
                for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))]
    parallel = [i for i in imports_of(ast.unparse(tree), module, is_package=path.endswith("__init__.py"))
                if i.target.startswith("ding.parallel")]
    if not parallel:
        problems.append(f"{module}: re-exports nothing of ding.parallel")
    if lazy:  # a package of serial names too: the parallel ones come through lazy_names only
        return problems
    for node in tree.body:
        docstring = isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
        names_list = (isinstance(node, ast.Assign) and [getattr(t, "id", "") for t in node.targets] == ["__all__"])
        own_import = (isinstance(node, ast.ImportFrom)
                      and (node.module or "").startswith(("ding.parallel", "__future__")))
        if not (docstring or names_list or own_import):
            problems.append(f"{module} (line {node.lineno}): only imports from ding.parallel and __all__ belong here")
    return problems


def test_each_reexport_module_only_reexports():
    problems = [p for module, lazy in reexport_modules().items() for p in _reexport_problems(module, lazy)]
    assert problems == []


def test_the_reexport_check_catches_a_definition(tmp_path, monkeypatch):
    pkg = tmp_path / "ding" / "worker"
    pkg.mkdir(parents=True)
    (pkg / "shim.py").write_text("from ding.parallel.protocol import CollectTask\n\ndef helper():\n    return 1\n")
    monkeypatch.setattr(sys.modules[__name__], "ROOT", str(tmp_path))
    found = _reexport_problems("ding.worker.shim", lazy=False)
    assert any("defines helper" in p for p in found) and any("line 3" in p for p in found)


# Classes in ding/parallel over the house size (docs/architecture.md: one sitting, <= ~300 lines, <= ~25 methods),
# name -> (file under ding/parallel, lines, methods) today. Shrinks only: remove an entry when its class is split.
CLASS_LINES, CLASS_METHODS = 300, 25
CLASS_SIZE_ALLOWLIST: dict[str, tuple[str, int, int]] = {}


def _parallel_class_sizes() -> dict[str, tuple[str, int, int]]:
    sizes = {}
    base = os.path.join(ROOT, "ding", "parallel")
    for folder, _, files in os.walk(base):
        for name in sorted(f for f in files if f.endswith(".py")):
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as f:
                tree = ast.parse(f.read())
            for node in ast.walk(tree):
                if isinstance(node, ast.ClassDef):
                    methods = sum(isinstance(b, (ast.FunctionDef, ast.AsyncFunctionDef)) for b in node.body)
                    lines = (node.end_lineno or node.lineno) - node.lineno + 1
                    sizes[node.name] = (os.path.relpath(path, base).replace(os.sep, "/"), lines, methods)
    return sizes


def test_no_parallel_class_outgrows_one_sitting_and_the_allowlist_stays_honest():
    problems = []
    for cls, (path, lines, methods) in sorted(_parallel_class_sizes().items()):
        too_big = lines > CLASS_LINES or methods > CLASS_METHODS
        if too_big and cls not in CLASS_SIZE_ALLOWLIST:
            problems.append(f"{cls} ({path}) has {lines} lines and {methods} methods, over {CLASS_LINES} lines "
                            f"or {CLASS_METHODS} methods: split it by concern")
        elif not too_big and cls in CLASS_SIZE_ALLOWLIST:
            problems.append(f"{cls} ({path}) is now {lines} lines and {methods} methods, within the limit: remove "
                            "it from CLASS_SIZE_ALLOWLIST in tests/test_architecture.py")
    missing = set(CLASS_SIZE_ALLOWLIST) - set(_parallel_class_sizes())
    problems += [f"{cls} of CLASS_SIZE_ALLOWLIST is no class in ding/parallel any more: remove its entry"
                 for cls in sorted(missing)]
    assert not problems, "\n".join(problems)
