"""Issue 36, item 2: a serial run started from weights (``load_ckpt_before_run``) loads them tensors-only, even
though its run state is registered before the hooks run: a crafted file (a pickled top-level object, or a crafted
run-state blob) never runs code, and only ``--resume`` of the run's own checkpoints reads the run state."""
from __future__ import annotations

import os
import pickle

import pytest

from ding.entry import serial_pipeline
from ding.utils import CheckpointError
from ding.worker import load_checkpoint_file

from .conftest import read_result


class _Payload:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


def _weights(cartpole_dqn) -> str:
    serial_pipeline(cartpole_dqn("src"), seed=0, max_train_iter=10)
    return os.path.join("src", "ckpt", "iteration_10.pth.tar")


def test_a_crafted_run_state_blob_in_the_weights_is_never_unpickled(in_tmp_dir, cartpole_dqn):
    import torch

    state = load_checkpoint_file(_weights(cartpole_dqn))
    state["extra"] = pickle.dumps({"loop": _Payload()})  # what a collector-written or planted file could hold
    torch.save(state, "crafted_extra.pth.tar")
    serial_pipeline(cartpole_dqn("tuned", load_ckpt_before_run="crafted_extra.pth.tar"), seed=0, max_train_iter=20)
    assert not os.path.exists("pwned")
    assert read_result("tuned")["train_iter"] == 20  # the weights (and counters) were loaded, the blob ignored


def test_a_pickled_object_in_the_weights_file_is_refused_by_name(in_tmp_dir, cartpole_dqn):
    import torch

    state = load_checkpoint_file(_weights(cartpole_dqn))
    state["evil"] = _Payload()
    torch.save(state, "crafted.pth.tar")
    with pytest.raises(CheckpointError, match=r"crafted\.pth\.tar' holds pickled objects besides tensors"):
        serial_pipeline(cartpole_dqn("tuned", load_ckpt_before_run="crafted.pth.tar"), seed=0, max_train_iter=20)
    assert not os.path.exists("pwned")
