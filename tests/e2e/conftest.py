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


def pytest_runtest_setup(item):
    """Every e2e test is held to a stated bound (a pytest-timeout mark on the test or its module; past it the test
    fails and the fixture above kills what it started); the bound goes into JUnit reports (tests/e2e/repeat.py)."""
    mark = item.get_closest_marker("timeout")
    assert mark is not None and mark.args, f"{item.nodeid} has no pytest.mark.timeout: state its bound"
    item.user_properties.append(("timeout_s", mark.args[0]))
