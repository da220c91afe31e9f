"""Run the parallel-mode e2e fault tests several times in a row and report each test's slowest run against its bound.

    python tests/e2e/repeat.py                      # the fault tests, 5 runs (``make test-e2e-repeat``)
    python tests/e2e/repeat.py --runs 3 tests/e2e   # every parallel e2e test, 3 runs

Every e2e test carries a ``pytest.mark.timeout`` (pytest-timeout): past it the test fails, its processes are killed by
the ``workdir`` fixture, and the run goes on -- a hang becomes a failure with a bound. Each run here is one pytest
process (``-p no:randomly``, the order as written); the table gives, per test, the runs that passed, the slowest
duration (setup + call + teardown) and the bound. The exit status is 0 only if every run of every test passed.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET

FAULT_TESTS = ["tests/e2e/test_parallel_faults.py", "tests/e2e/test_parallel_hostile.py"]


def _cases(junit_xml: str) -> dict[str, tuple[bool, float, float | None]]:
    """test id -> (passed, seconds, timeout bound in seconds) from one run's JUnit XML."""
    out: dict[str, tuple[bool, float, float | None]] = {}
    for case in ET.parse(junit_xml).getroot().iter("testcase"):
        name = f"{case.get('classname', '').rsplit('.', 1)[-1]}::{case.get('name')}"
        failed = any(case.find(tag) is not None for tag in ("failure", "error", "skipped"))
        bound = next((float(p.get("value", "nan")) for p in case.iter("property") if p.get("name") == "timeout_s"),
                     None)
        out[name] = (not failed, float(case.get("time", "0")), bound)
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("paths", nargs="*", default=FAULT_TESTS,
                        help="test files or folders (default: the fault tests)")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args(argv)
    if args.runs < 1:
        parser.error(f"--runs must be >= 1, got {args.runs}")
    results: dict[str, list[tuple[bool, float, float | None]]] = {}
    codes = []
    with tempfile.TemporaryDirectory(prefix="ding_e2e_repeat_") as tmp:
        for run in range(1, args.runs + 1):
            xml = os.path.join(tmp, f"run{run}.xml")
            cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "--durations=0", "-o",
                   "junit_family=xunit1", f"--junitxml={xml}", *args.paths]
            print(f"== run {run}/{args.runs}: {' '.join(cmd[1:])}", flush=True)
            t0 = time.monotonic()
            code = subprocess.call(cmd)
            codes.append(code)
            print(f"== run {run}/{args.runs} exited {code} after {time.monotonic() - t0:.0f} s", flush=True)
            if os.path.exists(xml):
                for name, case in _cases(xml).items():
                    results.setdefault(name, []).append(case)
    print(f"\n{'test':<100} {'passed':>7} {'max s':>7} {'bound s':>8}")
    for name, cases in results.items():
        bound = "none" if cases[-1][2] is None else f"{cases[-1][2]:g}"  # the last run's (the file may have changed)
        print(f"{name:<100} {sum(ok for ok, _, _ in cases):>3}/{len(cases):<3} "
              f"{max(t for _, t, _ in cases):>7.1f} {bound:>8}")
    good = sum(code == 0 for code in codes)
    print(f"{good}/{args.runs} runs passed (exit codes {codes})")
    return 0 if good == args.runs else 1


if __name__ == "__main__":
    sys.exit(main())
