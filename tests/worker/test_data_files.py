"""Data files of parallel mode: a collect task's samples in one file (split only past the size cap), data ids that
name a sample inside a file, and the one-pass check of a learn task's ids against the one-by-one rule."""
from __future__ import annotations

import os

import numpy as np
import pytest

from ding.parallel.files import (
    data_ids_valid,
    read_data,
    read_data_file,
    split_data_id,
    write_data,
    write_samples,
)
from ding.torch_utils import load_file
from ding.utils import DataFileError


def _sample(i: int, size: int = 4) -> dict:
    return {"obs": np.full(size, i, np.float32), "action": np.int64(i), "done": i % 3 == 0}


def test_a_tasks_samples_share_one_file_and_read_back_by_id(tmp_path):
    d = str(tmp_path)
    ids = write_samples(d, "collector_task_3_0", [_sample(i) for i in range(5)])
    assert ids == [f"collector_task_3_0:{i}" for i in range(5)] and os.listdir(d) == ["collector_task_3_0"]
    everything = read_data_file(d, ids[2])
    assert list(everything) == ids
    for i, data_id in enumerate(ids):
        got = read_data(d, data_id)
        assert got["obs"].tolist() == [float(i)] * 4 and int(got["action"]) == i and got["done"] == (i % 3 == 0)


def test_files_past_the_size_cap_are_split_down_to_one_sample(tmp_path):
    d = str(tmp_path)
    samples = [_sample(i, size=1000) for i in range(7)]  # ~4 KB each uncompressed
    ids = write_samples(d, "collector_task_4_0", samples, compress=False, max_bytes=9000)
    names = sorted(os.listdir(d))
    assert len(names) > 1 and all(os.path.getsize(os.path.join(d, n)) <= 9000 for n in names)
    assert [int(read_data(d, i)["action"]) for i in ids] == list(range(7))  # every sample once, in order
    assert all(split_data_id(i)[0].startswith("collector_task_4_0") for i in ids)
    # a sample larger than the cap on its own still goes (in a file of its own): the reader's limit decides
    big = write_samples(d, "collector_task_5_0", [_sample(0, size=5000)], compress=False, max_bytes=1000)
    assert big == ["collector_task_5_0:0"] and isinstance(load_file(os.path.join(d, "collector_task_5_0")), list)


def test_data_id_grammar_one_by_one_and_in_one_pass():
    good = ["a", "collector_task_1_0:15", "x.y-z:0", "..a", "a..:3"]
    bad = [".", "..", ".:1", "..:2", "a/b", "a:", "a:1:2", ":1", "a:b", "a\n", "a:1234567890", "", 7, None]
    assert split_data_id("collector_task_1_0:15") == ("collector_task_1_0", 15) and split_data_id("a") == ("a", None)
    assert data_ids_valid(good) and data_ids_valid([])
    for data_id in good:
        split_data_id(data_id)
    for data_id in bad:
        with pytest.raises(DataFileError, match="invalid data id"):
            split_data_id(data_id)
        assert not data_ids_valid(good + [data_id]), data_id


def test_writers_refuse_ids_that_are_not_plain_file_names(tmp_path):
    with pytest.raises(DataFileError, match="file name alone"):
        write_data(str(tmp_path), "f:0", _sample(0))
    with pytest.raises(DataFileError, match="plain file name"):
        write_samples(str(tmp_path), "f:0", [_sample(0)])
    with pytest.raises(DataFileError, match="invalid data id"):
        write_samples(str(tmp_path), "../up", [_sample(0)])
    assert os.listdir(tmp_path) == []
