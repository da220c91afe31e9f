"""Network namespaces as hosts for the tests marked ``netns`` (``make test-netns``): ``setup_netns.sh`` creates one
namespace per host joined through a bridge namespace, and the fixture removes them all at the end of the test, also
when it fails or is interrupted (Ctrl-C runs the finalizer; namespaces of a test killed outright are removed by the
next run's ``stale`` step). Where the machine cannot make namespaces (not root, no iproute2, a container without the
right), the tests are skipped with the reason -- or fail, under ``DING_REQUIRE_NETNS=1`` (what ``make test-netns``
sets)."""
from __future__ import annotations

import os
import subprocess
from dataclasses import dataclass, field

import pytest

SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "setup_netns.sh")


def _script(*args: str, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", SCRIPT, *args], capture_output=True, text=True, timeout=timeout)


@dataclass
class Hosts:
    """The namespaces of one test: ``address[host]`` inside them, ``exec(host)`` prefixes a command to run there."""

    tag: str
    address: dict[str, str] = field(default_factory=dict)

    def exec(self, host: str) -> list[str]:
        return ["ip", "netns", "exec", f"{self.tag}-{host}"]

    def cut(self, host: str) -> None:
        out = _script("cut", self.tag, host)
        assert out.returncode == 0, out.stderr

    def restore(self, host: str) -> None:
        out = _script("restore", self.tag, host)
        assert out.returncode == 0, out.stderr


@pytest.fixture
def hosts(request):
    """Four hosts -- ``coord``, ``learner``, ``colla``, ``collb`` -- on 10.231.0.1-4, removed at the end."""
    check = _script("check")
    if check.returncode != 0:
        reason = f"the network-namespace tests cannot run here: {check.stdout.strip() or check.stderr.strip()}"
        if os.environ.get("DING_REQUIRE_NETNS") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    _script("stale")
    tag = f"dingnt{os.getpid()}"
    _script("stop", tag)  # an earlier test of this process that could not clean up
    started = _script("start", tag, "coord", "learner", "colla", "collb")
    try:
        assert started.returncode == 0, f"setup_netns.sh start failed:\n{started.stdout}{started.stderr}"
        yield Hosts(tag, dict(line.split("=", 1) for line in started.stdout.split()))
    finally:
        stopped = _script("stop", tag)
        assert stopped.returncode == 0, f"setup_netns.sh stop left namespaces behind:\n{stopped.stderr}"


@pytest.fixture
def workdir(tmp_path):
    """The test's run directory; no process that mentions it may be left behind."""
    from tests.e2e._parallel import kill_all, processes_mentioning

    yield tmp_path
    left = processes_mentioning(str(tmp_path))
    kill_all(tmp_path)
    assert not left, f"processes left behind: {left}"
