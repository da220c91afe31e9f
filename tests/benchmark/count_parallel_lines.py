"""How big parallel mode is: the lines of ding/parallel/, its doors (ding/entry/parallel_entry.py, dist_entry.py) and
the re-export modules that keep DI-engine's import paths (docs/parallel.md, 'Import paths').

    python tests/benchmark/count_parallel_lines.py                 # the working tree
    python tests/benchmark/count_parallel_lines.py --before main   # also the same code before it had a wing (at main)

Two counts per file set: code lines (not blank, not a ``#`` comment; docstrings count) and raw lines. ``--before REV``
counts, at the git revision ``REV``, the files parallel mode had before the move into ding/parallel (listed below).
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOORS = ("ding/entry/parallel_entry.py", "ding/entry/dist_entry.py")
# Parallel mode's files before ding/parallel existed: what moved there, and the doors.
BEFORE = (
    "ding/worker/parallel_protocol.py", "ding/worker/parallel_files.py", "ding/worker/comm_role.py",
    *(f"ding/interaction/{m}.py" for m in ("__init__", "addresses", "base", "client", "http_server", "master",
                                           "responses", "slave")),
    *(f"ding/worker/coordinator/{m}.py" for m in ("__init__", "base_parallel_commander", "buffer_state",
                                                  "comm_coordinator", "coordinator", "data_ledger", "eval_shards",
                                                  "one_vs_one_parallel_commander", "policy_snapshots",
                                                  "solo_parallel_commander")),
    *(f"ding/worker/learner/comm/{m}.py" for m in ("__init__", "base_comm_learner", "flask_fs_learner",
                                                   "policy_publisher", "sample_store", "train_process")),
    *(f"ding/worker/collector/comm/{m}.py" for m in ("__init__", "base_comm_collector", "flask_fs_collector",
                                                     "naive_collector")),
    *(f"ding/worker/collector/{m}_parallel_collector.py" for m in ("base", "zergling", "marine")),
    *(f"ding/worker/adapter/{m}.py" for m in ("__init__", "learner_aggregator", "learner_group")),
    *(f"ding/engine/{m}.py" for m in ("coordinator_driver", "forked_roles", "role_process", "slurm_env",
                                      "slurm_launcher")),
    "ding/utils/cpu_placement.py", *DOORS,
)


def count(text: str) -> tuple[int, int]:
    """(code lines, raw lines) of one file's text."""
    lines = text.splitlines()
    return sum(1 for line in lines if line.strip() and not line.strip().startswith("#")), len(lines)


def wing_files() -> list[str]:
    """The parallel code of the working tree: ding/parallel, the doors, the re-export modules."""
    sys.path.insert(0, ROOT)
    from tests.test_architecture import reexport_modules

    wing = os.path.join(ROOT, "ding", "parallel")
    files = sorted(os.path.relpath(os.path.join(d, f), ROOT) for d, _, fs in os.walk(wing) for f in fs
                   if f.endswith(".py"))
    for module in reexport_modules():
        path = os.path.join(*module.split("."))
        files.append(os.path.join(path, "__init__.py") if os.path.isdir(os.path.join(ROOT, path)) else path + ".py")
    return files + list(DOORS)


def total(files: list[str], read) -> tuple[int, int]:
    code = raw = 0
    for path in files:
        c, r = count(read(path))
        code, raw = code + c, raw + r
    return code, raw


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--before", metavar="REV", help="also count parallel mode's old files at git revision REV")
    args = parser.parse_args()

    def read_tree(path: str) -> str:
        with open(os.path.join(ROOT, path), encoding="utf-8") as f:
            return f.read()

    files = wing_files()
    code, raw = total(files, read_tree)
    if args.before:
        def read_rev(path: str) -> str:
            return subprocess.run(["git", "show", f"{args.before}:{path}"], cwd=ROOT, capture_output=True, text=True,
                                  check=True).stdout

        b_code, b_raw = total(list(BEFORE), read_rev)
        print(f"before ({args.before}, {len(BEFORE)} files): {b_code} code lines, {b_raw} raw lines")
    print(f"now ({len(files)} files): {code} code lines, {raw} raw lines")
    if args.before:
        print(f"change: {100 * (code - b_code) / b_code:+.1f}% code lines, "
              f"{100 * (raw - b_raw) / b_raw:+.1f}% raw lines")
    return 0


if __name__ == "__main__":
    sys.exit(main())
