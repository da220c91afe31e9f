"""A single-node Slurm cluster for the tests marked ``slurm`` (``make test-slurm``): started once per session by
``setup_slurm.sh`` (installing Debian's slurm-wlm and munge when missing), stopped and removed at the end, also when
a test fails. Where the machine cannot run it (not root, no packages), the tests are skipped with the reason -- or
fail, under ``DING_REQUIRE_SLURM=1`` (what ``make test-slurm`` sets)."""
from __future__ import annotations

import os
import subprocess
import tempfile

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_slurm.sh")


def _unavailable(reason: str) -> None:
    if os.environ.get("DING_REQUIRE_SLURM") == "1":
        pytest.fail(f"the Slurm tests cannot run here: {reason}")
    pytest.skip(f"the Slurm tests cannot run here: {reason}")


@pytest.fixture(scope="session")
def slurm_cluster():
    """``{'SLURM_CONF': path}``: the environment that points srun/squeue/scancel at the test cluster."""
    check = subprocess.run(["bash", SCRIPT, "check"], capture_output=True, text=True, timeout=600)
    if check.returncode != 0:
        _unavailable(check.stdout.strip() or check.stderr.strip())
    install = subprocess.run(["bash", SCRIPT, "install"], capture_output=True, text=True, timeout=900)
    if install.returncode != 0:
        _unavailable(f"apt-get install slurm-wlm munge failed:\n{install.stdout[-2000:]}{install.stderr[-2000:]}")
    state = tempfile.mkdtemp(prefix="ding-slurm-")
    try:
        started = subprocess.run(["bash", SCRIPT, "start", state], capture_output=True, text=True, timeout=180)
        if started.returncode != 0:
            logs = ""
            for name in ("slurmctld.log", "slurmd.log", "munge/munged.log"):
                try:
                    with open(os.path.join(state, name), errors="replace") as f:
                        logs += f"--- {name}\n{f.read()[-1500:]}\n"
                except OSError:
                    pass
            pytest.fail(f"the test cluster did not start:\n{started.stdout}{started.stderr}\n{logs}")
        yield {"SLURM_CONF": os.path.join(state, "slurm.conf")}
    finally:
        subprocess.run(["bash", SCRIPT, "stop", state], capture_output=True, text=True, timeout=120)
