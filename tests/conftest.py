"""Shared test set-up: one torch thread (see docs/benchmarks.md, 'thread trap') and passive OpenMP waits."""
import os

os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import pytest  # noqa: E402
import torch  # noqa: E402

torch.set_num_threads(1)


@pytest.fixture
def in_tmp_dir(tmp_path, monkeypatch):
    """Run the test with the working directory set to a fresh temp dir (experiments write ./<exp_name>/)."""
    monkeypatch.chdir(tmp_path)
    return tmp_path
