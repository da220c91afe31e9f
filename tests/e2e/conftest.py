"""The e2e tests' working directory: any process of a test still alive at its end is killed, and fails the test."""
from __future__ import annotations

import pytest

from ._parallel import kill_all, processes_mentioning


@pytest.fixture
def workdir(tmp_path):
    yield tmp_path
    left = processes_mentioning(str(tmp_path))
    kill_all(tmp_path)
    assert not left, f"processes left behind: {left}"
