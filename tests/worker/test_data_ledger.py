"""DataLedger: pinned files outlive eviction, sampling defers deletion, sweeping and dropping go by name, and nothing
but regular files under path_data is ever deleted."""
from __future__ import annotations

import collections
import os

from ding.parallel.coordinator.data_ledger import DataLedger


def _touch(path_data, *names):
    for n in names:
        with open(os.path.join(path_data, n), "w") as f:
            f.write("x")


def test_pinned_files_are_deleted_only_once_unpinned(tmp_path):
    d = str(tmp_path)
    stats: collections.Counter[str] = collections.Counter()
    ledger = DataLedger(d, stats=stats)
    _touch(d, "collector_task_1_0", "collector_task_1_1")
    ledger.pin(["collector_task_1_0", "collector_task_1_0"])  # two learn tasks carry it
    ledger.evicted(["collector_task_1_0", "collector_task_1_1"])
    assert sorted(os.listdir(d)) == ["collector_task_1_0"] and ledger.doomed == 1
    ledger.unpin(["collector_task_1_0"])
    assert os.listdir(d) == ["collector_task_1_0"]
    ledger.unpin(["collector_task_1_0"])
    assert os.listdir(d) == [] and ledger.deleted == 2 == stats["deleted_files"] and ledger.pinned == 0


def test_evictions_while_sampling_wait_for_the_pins(tmp_path):
    d = str(tmp_path)
    ledger = DataLedger(d)
    _touch(d, "collector_task_2_0")
    with ledger.sampling():
        ledger.evicted(["collector_task_2_0"])  # max_use evicts an item as it is sampled...
        assert os.listdir(d) == ["collector_task_2_0"]
        ledger.pin(["collector_task_2_0"])  # ...and the learn task pins it in the same step
    assert os.listdir(d) == ["collector_task_2_0"]
    ledger.unpin(["collector_task_2_0"])
    assert os.listdir(d) == []


def test_drop_task_and_sweep_go_by_name(tmp_path):
    d = str(tmp_path)
    ledger = DataLedger(d)
    _touch(d, "collector_task_3_0", "collector_task_3_1", "collector_task_30_0", "collector_task_4_0", "keep.txt")
    assert ledger.drop_task("collector_task_3") == 2
    assert sorted(os.listdir(d)) == ["collector_task_30_0", "collector_task_4_0", "keep.txt"]
    assert ledger.sweep() == 2 and os.listdir(d) == ["keep.txt"]
    assert DataLedger(str(tmp_path / "missing")).sweep() == 0


def test_only_regular_files_under_path_data_are_checked_in_and_deleted(tmp_path):
    d = tmp_path / "data"
    d.mkdir()
    outside = tmp_path / "precious"
    outside.write_text("keep")
    (d / "collector_task_5_dir").mkdir()
    os.symlink(outside, d / "collector_task_5_link")
    _touch(str(d), "collector_task_5_0")
    ledger = DataLedger(str(d))
    assert ledger.check_written(["collector_task_5_0"]) is None
    assert "not a regular file" in ledger.check_written(["collector_task_5_0", "collector_task_5_dir"])
    assert "not a regular file" in ledger.check_written(["collector_task_5_link"])
    assert "no such data file" in ledger.check_written(["collector_task_5_9"])
    assert "invalid data id" in ledger.check_written(["../precious"])
    ledger.evicted(["collector_task_5_dir", "collector_task_5_link", "../precious", "collector_task_5_0"])
    assert ledger.sweep() == 0  # the directory and the link are left alone, and nothing raised
    assert sorted(os.listdir(d)) == ["collector_task_5_dir", "collector_task_5_link"]
    assert outside.read_text() == "keep"


def test_a_file_of_several_samples_goes_when_the_last_of_them_is_done_with(tmp_path):
    d = str(tmp_path)
    ledger = DataLedger(d)
    _touch(d, "collector_task_6_0", "collector_task_7_0")
    six = [f"collector_task_6_0:{i}" for i in range(3)]
    ledger.added(six)
    ledger.evicted(six[:2])
    ledger.evicted(six[:2])  # the same items let go of twice must not count for the third
    assert sorted(os.listdir(d)) == ["collector_task_6_0", "collector_task_7_0"]
    ledger.pin([six[2]])
    ledger.evicted([six[2]])
    assert "collector_task_6_0" in os.listdir(d)  # a learn task still carries its last sample
    ledger.unpin([six[2]])
    assert os.listdir(d) == ["collector_task_7_0"] and ledger.deleted == 1
    # a sample id the ledger never saw enter a buffer: its file is left for the sweep, never deleted early
    ledger.evicted(["collector_task_7_0:0"])
    assert os.listdir(d) == ["collector_task_7_0"]
    # a saved buffer state that refers to one sample of a file keeps the whole file through a sweep
    ledger.keep(["collector_task_7_0:1"])
    assert ledger.sweep() == 0 and os.listdir(d) == ["collector_task_7_0"]
