"""DI-engine 0.5.3's own unit tests for the modules ding has, run against ding and against DI-engine, per area.

    git clone --depth 1 --branch v0.5.3 https://github.com/opendilab/DI-engine /tmp/DI-engine-0.5.3
    python tests/benchmark/di_engine_unit_tests.py --source /tmp/DI-engine-0.5.3 \\
        --di-engine-python /tmp/die-venv/bin/python [--area utils] [--json out.json]

The selected test files (:data:`SELECTED`: every ``<package>/tests/test_<module>.py`` of the areas below whose module
ding has, and a few more whose module ding has under another layout) are copied into a temporary directory, never
into this repository, beside a ``conftest.py`` that lets their ``from ding.<pkg>.tests.<helper> import ...`` lines
find the copied helpers. pytest runs them once with each interpreter (``--import-mode=importlib``, 120 s per test);
the report counts, per area, the tests that pass on DI-engine, those of them that pass on ding, and the excluded ones
(:data:`EXCLUDED`, each with its reason).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from collections import defaultdict

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
AREAS = ("worker", "envs", "interaction", "league", "config", "utils", "rl_utils", "torch_utils", "policy", "model",
         "entry")
# Test files whose module ding has under another layout than ``<package>/<module>.py``.
EXTRA_FILES = (
    "ding/interaction/tests/base/test_app.py", "ding/interaction/tests/base/test_common.py",
    "ding/interaction/tests/base/test_network.py", "ding/interaction/tests/base/test_threading.py",
    "ding/interaction/tests/config/test_base.py", "ding/interaction/tests/exception/test_base.py",
    "ding/interaction/tests/exception/test_master.py", "ding/interaction/tests/exception/test_slave.py",
    "ding/interaction/tests/interaction/test_errors.py", "ding/interaction/tests/interaction/test_simple.py",
    "ding/league/tests/test_league_metric.py", "ding/league/tests/test_payoff.py",
    "ding/utils/tests/test_segment_tree.py", "ding/torch_utils/loss/tests/test_contrastive_loss.py",
    "ding/worker/coordinator/tests/test_one_vs_one_commander.py",
)
# Test ids (file::name prefix) left out of the count, with the reason.
EXCLUDED: dict[str, str] = {
    "ding/entry/tests/test_parallel_entry.py": "DI-engine's parallel mode crashes at start (docs/benchmarks.md); "
                                               "ding's parallel mode has its own tests",
    "ding/envs/env_manager/tests/test_envpool_env_manager.py": "needs envpool (dropped on this Python)",
    "ding/worker/collector/tests/test_marine_parallel_collector.py": "reaches DI-engine's private collector "
                                                                       "internals and its fake env's timing",
    "ding/worker/coordinator/tests/test_coordinator.py": "tests DI-engine's private coordinator internals",
    "ding/worker/adapter/tests/test_learner_aggregator.py": "uses DI-engine's fake slave protocol",
    "ding/utils/tests/test_file_helper.py": "DI-engine's ceph / redis / memcached storage, dropped",
}
_NOT_SHIPPED = "a model class ding does not ship (algorithm breadth, not issue #39)"
for _key in ("test_q_learning.py::test_bdq", "test_q_learning.py::test_iqn", "test_q_learning.py::test_fqf",
             "test_q_learning.py::test_qrdqn", "test_q_learning.py::test_GTrXLDQN", "test_qac.py::test_discreteqac",
             "test_qac.py::test_qacpixel", "test_vac.py::test_DREAMERVAC"):
    EXCLUDED[f"ding/model/template/tests/{_key}"] = _NOT_SHIPPED
EXCLUDED["ding/model/common/tests/test_encoder.py::test_dreamer_conv_encoder"] = (
    "DreamerV3's layer-normed 'same' conv stack (ConvEncoder(layer_norm=True)), not shipped (algorithm breadth)")
EXCLUDED["ding/torch_utils/tests/test_data_helper.py::test_to_device_cuda"] = "needs CUDA"
# where ding differs from DI-engine on purpose (docs/from_di_engine.md, "What differs on purpose")
EXCLUDED["ding/league/tests/test_player.py"] = (
    "its fixture gives two league exploiters one id; ding's payoff table refuses a second player with an id "
    "already in it (their results would share one row)")
EXCLUDED["ding/league/tests/test_payoff.py::test_update"] = (
    "expects update() to return False on an unknown result 'error'; ding raises one LeagueError naming the field")
EXCLUDED["ding/league/tests/test_payoff.py::test_getitem"] = "reads the payoff's private _data dict"
EXCLUDED["ding/league/tests/test_league_metric.py::test_league_metric"] = (
    "DI-engine's LeagueMetricEnv rates with trueskill's global environment (its _rate_1vs1 is a staticmethod "
    "calling trueskill.rate_1vs1), ignoring the env's own beta / tau / draw_probability; ding rates with them")
for _param in ("obs_shape6-3", "obs_shape7-act_shape7", "obs_shape8-act_shape8"):
    for _test in ("test_drqn", "test_drqn_inference", "test_drqn_res_link", "test_drqn_inference_res_link"):
        EXCLUDED[f"ding/model/template/tests/test_q_learning.py::{_test}[{_param}]"] = (
            "DRQN on image observations: ding's template encodes them with the Nature CNN (a 512-wide LSTM state) "
            "where the test passes DI-engine's 64-wide states")
for _param in ("action_shape0-True-regression", "action_shape1-True-reparameterization",
               "action_shape4-True-regression", "action_shape5-True-reparameterization"):
    EXCLUDED[f"ding/model/template/tests/test_qac.py::test_fcqac[{_param}]"] = (
        "twin critics read as model.critic[1][i]: ding keeps them as model.critic[0] / [1] (DI-engine's nesting "
        "would change ding's checkpoint keys)")
EXCLUDED["ding/rl_utils/tests/test_adder.py::test_get_nstep_return_data"] = (
    "expects padded n-step windows for the last nstep-1 transitions of a chunk that does not end its episode; "
    "ding returns only the complete windows and the caller passes the rest again with the next chunk (the n-step "
    "contract, docs/policies.md), so no sample bootstraps from a chunk's cut")
for _test in ("test_qmix", "test_qmix_process_global_state"):
    EXCLUDED[f"ding/model/template/tests/test_qmix.py::{_test}"] = (
        "DI-engine's QMix is time-major with per-agent prev_state lists, single_step and a private "
        "_process_global_state; ding's is batch-first with one hidden tensor (the layout ding's QMIX policy uses)")
for _key in ("interaction/test_simple.py", "interaction/test_errors.py"):
    EXCLUDED[f"ding/interaction/tests/{_key}"] = (
        "DI-engine's master/slave protocol (channel ids, no shared secret, Slave(host, port, channel=...)); ding's "
        "transport needs a token and speaks JSON only, so the two cannot talk (docs/parallel.md, different on "
        "purpose)")
EXCLUDED["ding/utils/data/tests/test_collate_fn.py::test_basic"] = (
    "expects default_collate to raise TypeError on a batch of plain objects; ding's keeps any other object as the "
    "list of the batch's items (a None hidden state, an env's info object)")
EXCLUDED["ding/worker/learner/tests/test_base_learner.py::test_naive"] = (
    "expects train_iterations more iterations after the loaded checkpoint's 5 (DI-engine's start() counts from the "
    "checkpoint); ding's learner trains until train_iter reaches train_iterations, as the run it continues would "
    "have, and its run lock refuses the exp_name directory an earlier run left")
EXCLUDED["ding/worker/replay_buffer/tests/test_naive_buffer.py::test_track_used_data"] = (
    "expects the buffer to delete the file named by each evicted item's data_id; ding passes evicted items to the "
    "set_used_data_callback() callback and never deletes a path found in the data")
EXCLUDED["ding/worker/replay_buffer/tests/test_advanced_buffer.py::test_rate_limit"] = (
    "reads the private _thruput_controller's history counts, decayed x0.01 per window; ding's controller counts a "
    "sliding window of one-second buckets")
EXCLUDED["ding/worker/replay_buffer/tests/test_advanced_buffer.py::test_naive"] = (
    "a pickled demo file's staleness sentinel -1 (no collect_iter) and the private _tail / _max_priority")
_PRIVATE_BUFFER = "reads the buffer's private internals (_tail, _head, _data, _sample_check, _sum_tree / _min_tree)"
for _key in ("test_advanced_buffer.py::test_push", "test_advanced_buffer.py::test_save_and_load_data",
             "test_advanced_buffer.py::test_update", "test_advanced_buffer.py::test_sample",
             "test_advanced_buffer.py::test_head_tail", "test_advanced_buffer.py::test_weight",
             "test_naive_buffer.py::test_push", "test_naive_buffer.py::test_save_and_load_data",
             "test_naive_buffer.py::test_sample"):
    EXCLUDED[f"ding/worker/replay_buffer/tests/{_key}"] = _PRIVATE_BUFFER
# the training tests of algorithms ding does not ship, and the offline doors issue #41 adds
for _algo in ("mdqn", "bdq", "hybrid_ddpg", "hybrid_pdqn", "hybrid_mpdqn", "dqn_stdim", "iqn", "fqf", "qrdqn",
              "discrete_sac", "impala", "her_dqn", "collaq", "coma", "qmix", "wqmix", "madqn", "qtran", "atoc", "ppg",
              "sqn", "acer", "cql", "ibc", "d4pg", "discrete_cql", "discrete_dt", "td3_bc"):
    EXCLUDED[f"ding/entry/tests/test_serial_entry.py::test_{_algo}"] = (
        "an algorithm ding does not ship" if _algo not in ("cql", "discrete_cql", "discrete_dt", "td3_bc") else
        "offline RL (collect_demo_data / serial_pipeline_offline): pending issue #41's merge")


def selected_files(source: str) -> list[str]:
    out = []
    for path in sorted(glob.glob(os.path.join(source, "ding", "**", "tests", "test_*.py"), recursive=True)):
        rel = os.path.relpath(path, source).replace(os.sep, "/")
        parts = rel.split("/")
        if parts[1] not in AREAS:
            continue
        pkg = "/".join(parts[:parts.index("tests")])
        module = parts[-1][len("test_"):-3]
        if os.path.exists(os.path.join(ROOT, pkg, module + ".py")) or os.path.isdir(os.path.join(ROOT, pkg, module)):
            out.append(rel)
    return sorted(set(out) | {f for f in EXTRA_FILES if os.path.exists(os.path.join(source, f))})


CONFTEST = '''
import os, pkgutil, importlib
HERE = os.path.dirname(os.path.abspath(__file__))


def _extend(pkg_name, overlay_dir):
    """Let ``pkg_name``'s subpackages also be found in ``overlay_dir`` (DI-engine's tests packages)."""
    try:
        pkg = importlib.import_module(pkg_name)
    except ImportError:
        return
    if hasattr(pkg, "__path__") and overlay_dir not in list(pkg.__path__):
        pkg.__path__.append(overlay_dir)


for dirpath, dirnames, _ in os.walk(os.path.join(HERE, "ding")):
    rel = os.path.relpath(dirpath, HERE)
    if "tests" in rel.split(os.sep):
        continue
    _extend(rel.replace(os.sep, "."), dirpath)
'''


_RELATIVE = re.compile(r"^(\s*from )(\.+)([\w.]*)( import )", re.MULTILINE)


def _absolute_imports(src: str, package: str) -> str:
    """``from ..x import y`` written as ``from <package's parent>.x import y`` (the copies live outside DI-engine's
    package tree, so only absolute imports find their targets); nothing else in the file changes."""
    def repl(m: re.Match) -> str:
        base = package.split(".")
        base = base[:len(base) - (len(m.group(2)) - 1)]
        target = ".".join(base + ([m.group(3)] if m.group(3) else []))
        return f"{m.group(1)}{target}{m.group(4)}"

    return _RELATIVE.sub(repl, src)


def stage(source: str, files: list[str], dest: str) -> None:
    """Copy the test files with their packages' helpers (every file of their ``tests`` directories)."""
    test_dirs = {f[:f.index("/tests/") + len("/tests")] for f in files}
    for d in test_dirs:
        shutil.copytree(os.path.join(source, d), os.path.join(dest, d), dirs_exist_ok=True)
    for path in glob.glob(os.path.join(dest, "ding", "**", "*.py"), recursive=True):
        rel = os.path.relpath(path, dest).replace(os.sep, "/")
        package = os.path.dirname(rel).replace("/", ".")
        with open(path, encoding="utf-8") as f:
            src = f.read()
        with open(path, "w", encoding="utf-8") as f:
            f.write(_absolute_imports(src, package))
    with open(os.path.join(dest, "conftest.py"), "w") as f:
        f.write(CONFTEST)


def report_path(dest: str, ding_on_path: bool) -> str:
    """Where :func:`run` leaves the JUnit XML report of one interpreter's run."""
    return os.path.join(dest, f"report-{os.getpid()}-{int(ding_on_path)}.xml")


def run(python: str, dest: str, files: list[str], ding_on_path: bool, timeout: float) -> dict[str, str]:
    """``{test id: 'passed' | 'failed' | 'error' | 'skipped'}`` from one pytest run."""
    report = report_path(dest, ding_on_path)
    env = dict(os.environ, OMP_NUM_THREADS="1", DING_TORCH_THREADS="1", PYTHONDONTWRITEBYTECODE="1")
    env.pop("PYTHONPATH", None)
    if ding_on_path:
        env["PYTHONPATH"] = ROOT
    cmd = [python, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--import-mode=importlib", "--timeout", "120",
           "-o", "addopts=", "--continue-on-collection-errors", f"--junitxml={report}", *files]
    # output to a file, not a pipe: a test's leftover child process holding a pipe open would keep this call
    # waiting after pytest itself has finished
    with open(report[:-4] + ".log", "w") as log:
        subprocess.run(cmd, cwd=dest, env=env, stdout=log, stderr=subprocess.STDOUT, timeout=timeout)
    return read_report(report)


def read_report(report: str) -> dict[str, str]:
    """``{test id: outcome}`` from a pytest JUnit XML report (missing file: none)."""
    outcomes: dict[str, str] = {}
    if not os.path.exists(report):
        return outcomes
    for case in ET.parse(report).iter("testcase"):
        cls = case.get("classname", "")
        name = case.get("name", "")
        outcome = "passed"
        for child in case:
            if child.tag in ("failure", "error", "skipped"):
                outcome = {"failure": "failed"}.get(child.tag, child.tag)
        outcomes[f"{cls}::{name}"] = outcome
    return outcomes


def file_of(test_id: str, files: list[str]) -> str:
    cls = test_id.split("::")[0]
    for f in files:
        if cls.replace(".", "/").startswith(f[:-3].replace("/", "/")) or f[:-3].replace("/", ".") in cls:
            return f
    return cls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--source", required=True, help="a checkout of DI-engine v0.5.3")
    parser.add_argument("--di-engine-python", required=True, help="interpreter of a venv with di-engine==0.5.3")
    parser.add_argument("--area", action="append", help="only these areas (worker, utils, ...)")
    parser.add_argument("--json", help="write every test's outcome on both to this file")
    parser.add_argument("--di-engine-json",
                        help="take DI-engine's outcomes from an earlier --json file (runs ding only)")
    parser.add_argument("--di-engine-junit",
                        help="take DI-engine's outcomes from the JUnit XML of an earlier DI-engine run of the same "
                             "files (runs ding only)")
    parser.add_argument("--save-di-engine-junit",
                        help="copy the JUnit XML of this DI-engine run here (for --di-engine-junit later)")
    parser.add_argument("--timeout", type=float, default=3600)
    args = parser.parse_args()
    files = [f for f in selected_files(args.source) if not args.area or f.split("/")[1] in args.area]
    with tempfile.TemporaryDirectory(prefix="di_engine_tests_") as dest:
        stage(args.source, files, dest)
        if args.di_engine_junit:
            theirs = read_report(args.di_engine_junit)
        elif args.di_engine_json:
            with open(args.di_engine_json) as f:
                theirs = {k: v["di_engine"] for k, v in json.load(f)["tests"].items()}
        else:
            theirs = run(args.di_engine_python, dest, files, False, args.timeout)
            if args.save_di_engine_junit:
                shutil.copyfile(report_path(dest, False), args.save_di_engine_junit)
        ours = run(sys.executable, dest, files, True, args.timeout)
    rows: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    detail = {}
    for test_id, outcome in sorted(theirs.items()):
        f = file_of(test_id, files)
        area = f.split("/")[1] if f.startswith("ding/") else "?"
        name = test_id.split("::", 1)[-1]
        reason = next((r for key, r in EXCLUDED.items()
                       if key == f or (f"{f}::{name}" + "[").startswith(key + "[")
                       or f"{f}::{name}".startswith(key + "[")), None)
        detail[test_id] = {"file": f, "di_engine": outcome, "ding": ours.get(test_id, "not run"), "excluded": reason}
        if outcome != "passed":
            continue
        if reason:
            rows[area]["excluded"] += 1
            continue
        rows[area]["pass_di_engine"] += 1
        rows[area]["pass_ding"] += ours.get(test_id) == "passed"
    total_die = sum(r["pass_di_engine"] for r in rows.values())
    total_ding = sum(r["pass_ding"] for r in rows.values())
    print(f"{'area':<12} {'pass on DI-engine':>18} {'of them on ding':>16} {'excluded':>9}")
    for area in sorted(rows):
        r = rows[area]
        print(f"{area:<12} {r['pass_di_engine']:>18} {r['pass_ding']:>16} {r['excluded']:>9}")
    share = total_ding / total_die if total_die else 0.0
    print(f"{'total':<12} {total_die:>18} {total_ding:>16}   ({share:.1%} pass on ding)")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"rows": rows, "tests": detail}, f, indent=1)
    print(json.dumps({"pass_di_engine": total_die, "pass_ding": total_ding, "share": round(share, 4),
                      "files": len(files), "tests_run_di_engine": len(theirs)}))


if __name__ == "__main__":
    main()
