"""Issue 36, items 8 and 9: every path a parallel run uses comes from its own run directory -- a resumed run that was
renamed (its directory existed) writes only into the renamed one, and an absolute ``--exp-name`` keeps ``data/`` and
``policy/`` in it, not under the working directory."""
from __future__ import annotations

import os
import subprocess

import pytest

from ._parallel import ding_cmd, result, write_config

pytestmark = pytest.mark.timeout(240)


def _run(workdir, *args: str) -> subprocess.CompletedProcess:
    out = subprocess.run(ding_cmd("-m", "parallel", *args), cwd=str(workdir), capture_output=True, text=True,
                         timeout=150)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out


def test_resume_of_a_renamed_run_writes_only_into_that_run(workdir):
    exp = "renamed"
    cfg = write_config(workdir, exp, main={"env": {"stop_value": 1e9}})
    earlier = workdir / exp
    earlier.mkdir()
    (earlier / "earlier_run").write_text("finished")  # the earlier run that made the name taken
    _run(workdir, "-c", cfg, "--train-iter", "30")
    renamed = [d for d in os.listdir(workdir) if d.startswith(exp + "_") and os.path.isdir(workdir / d)]
    assert len(renamed) == 1, os.listdir(workdir)
    _run(workdir, "-c", cfg, "--train-iter", "60", "--resume")
    assert sorted(os.listdir(earlier)) == ["earlier_run"]  # nothing of either session went there
    r = result(workdir, renamed[0])
    assert r["train_iter"] >= 60
    assert os.listdir(workdir / renamed[0] / "policy")


def test_an_absolute_exp_name_keeps_data_and_policy_in_the_run_directory(workdir, tmp_path_factory):
    where = tmp_path_factory.mktemp("elsewhere") / "abs_run"
    cfg = write_config(workdir, "absolute", main={"env": {"stop_value": 1e9}})
    out = _run(workdir, "-c", cfg, "--exp-name", str(where), "--train-iter", "20")
    assert os.listdir(where / "policy"), os.listdir(where)
    assert not [d for d in os.listdir(workdir) if os.path.isdir(workdir / d)], os.listdir(workdir)
    assert f"results in {where}/" in out.stdout and ".//" not in out.stdout, out.stdout[-2000:]
