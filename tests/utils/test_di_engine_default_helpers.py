"""DI-engine's ``ding.utils.default_helper`` names: default_get, override, error_wrapper, list_split,
LimitedSpaceContainer, flatten_dict, one_time_warning, get_shape0, deep_update's options, squeeze's tuple form,
RunningMeanStd per feature, and the reader-writer file lock."""
from __future__ import annotations

import logging
import multiprocessing as mp

import numpy as np
import pytest
import torch

from ding.utils import RunningMeanStd, get_rw_file_lock
from ding.utils.default_helper import (
    LimitedSpaceContainer,
    deep_update,
    default_get,
    error_wrapper,
    flatten_dict,
    get_shape0,
    list_split,
    one_time_warning,
    override,
    split_data_generator,
    squeeze,
)


def test_default_get_and_override():
    assert default_get({"a": 5}, "a", default_value=1) == 5
    assert default_get({}, "a", default_fn=lambda: 3) == 3
    with pytest.raises(AssertionError, match="judge_fn"):
        default_get({}, "a", default_value=3, judge_fn=lambda x: x < 0)

    class Base:
        def run(self):
            return 0

    class Good(Base):
        @override(Base)
        def run(self):
            return 1

    assert Good().run() == 1
    with pytest.raises(NameError, match="does not override"):
        class Bad(Base):
            @override(Base)
            def runn(self):
                return 1


def test_error_wrapper_returns_the_default_and_logs(caplog):
    wrapped = error_wrapper(lambda a, b: a / b, -1, "dividing")
    assert wrapped(4, 2) == 2
    with caplog.at_level(logging.WARNING):
        assert wrapped(1, 0) == -1
    assert "dividing" in caplog.text and "ZeroDivisionError" in caplog.text


def test_list_split_container_flatten():
    assert list_split(list(range(7)), 3) == ([[0, 1, 2], [3, 4, 5]], [6])
    assert list_split([1, 2], 2) == ([[1, 2]], None)
    box = LimitedSpaceContainer(0, 2)
    assert box.acquire_space() and box.acquire_space() and not box.acquire_space()
    box.release_space()
    assert box.cur == 1 and box.get_residual_space() == 1 and box.cur == 2
    with pytest.raises(ValueError, match="min_val"):
        LimitedSpaceContainer(3, 1)
    assert flatten_dict({"a": 1, "b": {"c": {"d": 2}}}) == {"a": 1, "b/c/d": 2}


def test_one_time_warning_logs_once(caplog):
    with caplog.at_level(logging.WARNING):
        one_time_warning("dicompat-once")
        one_time_warning("dicompat-once")
    assert caplog.text.count("dicompat-once") == 1


def test_get_shape0_and_squeeze():
    assert get_shape0({"a": {"b": torch.zeros(4, 3)}}) == 4
    assert get_shape0([np.zeros((2, 1))]) == 2
    with pytest.raises(TypeError, match="batch size"):
        get_shape0({"a": ["x"]})
    assert squeeze([3]) == 3 and squeeze([1, 3]) == (1, 3)


def test_deep_update_options():
    base = {"a": 1, "b": {"c": 2}}
    with pytest.raises(RuntimeError, match="unknown key 'g'"):
        deep_update({"a": 1, "b": {"c": 2}}, {"b": {"g": 1}}, new_keys_allowed=False)
    assert deep_update(base, {"b": {"g": 1}}, new_keys_allowed=False, whitelist=["b"])["b"] == {"c": 2, "g": 1}
    typed = {"m": {"type": "old", "z": 4}}
    out = deep_update(typed, {"m": {"type": "new", "c": 5}}, override_all_if_type_changes=["m"])
    assert out["m"] == {"type": "new", "c": 5}


def test_running_mean_std_per_feature_and_state():
    x = np.random.RandomState(0).normal(2.0, 3.0, size=(500, 3))
    rms = RunningMeanStd(shape=(3,))
    rms.update(x[:200])
    rms.update(x[200:])
    assert isinstance(rms.mean, torch.Tensor) and rms.mean.shape == (3,)
    assert np.allclose(rms.mean.numpy(), x.mean(0), atol=1e-3) and np.allclose(rms.std.numpy(), x.std(0), atol=1e-3)
    copy = RunningMeanStd(shape=(3,))
    copy.load_state_dict(rms.state_dict())
    assert torch.equal(copy.mean, rms.mean)
    assert RunningMeanStd.new_shape((2,), (1,), (1,)) == ((2,), (1,), (1,))
    assert split_data_generator is not None  # DI-engine's path to the one implementation


def _hold_write(path, held, release):
    with get_rw_file_lock(path, "write"):
        held.set()
        release.wait(10)


def test_rw_file_lock_excludes_readers_while_written(tmp_path):
    path = str(tmp_path / "data.npy")
    held, release = mp.Event(), mp.Event()
    proc = mp.Process(target=_hold_write, args=(path, held, release))
    proc.start()
    try:
        assert held.wait(10)
        import fcntl
        import os
        fd = os.open(path + ".lock", os.O_RDWR)
        try:
            with pytest.raises(BlockingIOError):
                fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)  # what a reader would take
        finally:
            os.close(fd)
    finally:
        release.set()
        proc.join(10)
    with get_rw_file_lock(path, "read"), get_rw_file_lock(path, "read"):  # readers share
        pass
    with pytest.raises(ValueError, match="'read' or 'write'"):
        get_rw_file_lock(path, "append")
