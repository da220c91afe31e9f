"""Every env test must leave no worker process behind."""
import multiprocessing as mp

import pytest


@pytest.fixture(autouse=True)
def no_child_process_left():
    yield
    left = mp.active_children()
    for p in left:  # clean up so one failure does not cascade, then fail the test
        p.kill()
        p.join(1)
    assert not left, f"worker processes left behind: {left}"
