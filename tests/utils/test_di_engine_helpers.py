"""DI-engine's small helpers in ``ding.utils`` / ``ding.config``: the plateau ``Scheduler``, list/dict transposes,
``save_file`` / ``read_file``, ``LockContext``, ``read_config_directly``."""
from __future__ import annotations

import os
import threading

import pytest
import torch

from ding.config import read_config_directly
from ding.utils import (
    ConfigError,
    LockContext,
    LockContextType,
    Scheduler,
    dicts_to_lists,
    lists_to_dicts,
    read_file,
    remove_file,
    save_file,
)


def test_scheduler_changes_the_parameter_after_patience_stagnant_steps():
    s = Scheduler(dict(schedule_mode="reduce", factor=0.1, change_range=[0.0, 1.0], patience=2, optimize_mode="max"))
    param = 0.5
    for metric in (1.0, 2.0, 2.0, 2.0, 2.0):  # improvements, then three steps without one (> patience)
        param = s.step(metric, param)
    assert param == pytest.approx(0.4) and s.bad_epochs_num == 0
    for _ in range(3 * 5):
        param = s.step(2.0, param)
    assert param == pytest.approx(0.0)  # clipped at change_range[0]


def test_scheduler_modes_cooldown_and_bad_config():
    mult = Scheduler(dict(schedule_mode="multi", factor=2, change_range=[-1, 10], patience=0, cooldown=2))
    assert mult.update_param(3.0) == 6.0 and mult.update_param(8.0) == 10
    assert Scheduler(dict(schedule_mode="div", factor=2, change_range=[1, 10])).update_param(3.0) == 1.5
    assert Scheduler(dict(schedule_mode="add", factor=0.5, change_range=[-1, 1])).update_param(0.8) == 1
    p = 1.0
    for metric in (5.0, 5.0, 5.0, 5.0):  # optimize 'min': equal is no improvement; the cooldown skips 2 steps
        p = mult.step(metric, p)
    assert p == 2.0 and mult.in_cooldown and mult.cooldown_counter == 1  # changed once, then cooling down again
    assert Scheduler(dict(optimize_mode="min", threshold=0.5)).is_better(1.0)
    with pytest.raises(ConfigError, match="scheduler.schedule_mode: 'halve'"):
        Scheduler(dict(schedule_mode="halve"))
    with pytest.raises(ConfigError, match="scheduler.change_range: expected a list"):
        Scheduler(dict(change_range=[1, 0]))
    with pytest.raises(AssertionError, match="scheduler.factor"):  # what DI-engine's code and tests catch
        Scheduler(dict(factor=-1))
    with pytest.raises(TypeError, match="metrics must be a float"):
        mult.step(1, 1.0)


def test_lists_to_dicts_and_back():
    assert lists_to_dicts([{1: 1, 10: 3}, {1: 2, 10: 4}]) == {1: [1, 2], 10: [3, 4]}
    assert dicts_to_lists({1: [1, 2], 10: [3, 4]}) == [{1: 1, 10: 3}, {1: 2, 10: 4}]
    nested = lists_to_dicts([{"a": {"x": 1}, "prev_state": {"h": 0}}, {"a": {"x": 2}, "prev_state": {"h": 1}}],
                            recursive=True)
    assert nested == {"a": {"x": [1, 2]}, "prev_state": [{"h": 0}, {"h": 1}]}
    from collections import namedtuple

    pt = namedtuple("pt", "x y")
    assert lists_to_dicts([pt(1, 2), pt(3, 4)]) == pt((1, 3), (2, 4))
    with pytest.raises(ValueError, match="empty"):
        lists_to_dicts([])


def test_save_file_and_read_file_round_trip(tmp_path):
    path = str(tmp_path / "f")
    data = {"a": [1, 2, 3], "t": torch.arange(3)}
    save_file(path, data, use_lock=True)
    back = read_file(path)
    assert back["a"] == [1, 2, 3] and torch.equal(back["t"], torch.arange(3))
    assert not [n for n in os.listdir(tmp_path) if n != "f"]  # written atomically, no temp file left
    remove_file(path)
    remove_file(path)  # a missing file is no error
    assert not os.path.exists(path)
    tree = tmp_path / "run" / "sub"
    tree.mkdir(parents=True)
    (tree / "x.txt").write_text("x")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "keep.txt").write_text("k")
    os.symlink(outside, tmp_path / "run" / "link")
    remove_file(str(tmp_path / "run"))  # a directory goes with its contents, as DI-engine's rm -rf
    assert not (tmp_path / "run").exists() and (outside / "keep.txt").exists()  # links are not followed
    with pytest.raises(ValueError, match="fs_type 'ceph' is not supported"):
        save_file(path, data, fs_type="ceph")


def test_lock_context_serialises_threads():
    lock = LockContext(LockContextType.THREAD_LOCK)
    counter = [0]

    def bump():
        for _ in range(2000):
            with lock:
                v = counter[0]
                counter[0] = v + 1

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert counter[0] == 8000
    assert LockContext(LockContextType.PROCESS_LOCK).type is LockContextType.PROCESS_LOCK


def test_read_config_directly_returns_the_files_values(tmp_path):
    path = tmp_path / "my_config.py"
    path.write_text("import os\nfrom easydict import EasyDict\n_private = 1\n"
                    "my_config = EasyDict(dict(env=dict(n=3)))\nother = [1, 2]\ndef helper():\n    pass\n")
    cfg = read_config_directly(str(path))
    assert set(cfg) == {"my_config", "other"} and cfg["my_config"].env.n == 3
    with pytest.raises(ConfigError, match="not a .py config file"):
        read_config_directly(str(tmp_path / "cfg.yaml"))
