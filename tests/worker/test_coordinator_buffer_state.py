"""The coordinator's buffers on disk: a round trip keeps items, priorities and order; the kept data ids are exactly
the valid items' (overwritten slots are not kept)."""
from __future__ import annotations

import pytest
from easydict import EasyDict

from ding.parallel.coordinator.buffers import load_buffer_state, referenced_data_ids, save_buffer_state
from ding.utils import ReplayBufferError
from ding.worker import create_buffer


@pytest.mark.parametrize("kind", ["naive", "advanced"])
def test_round_trip_and_referenced_ids(tmp_path, kind):
    cfg = EasyDict(type=kind, replay_buffer_size=8)
    buf = create_buffer(cfg, instance_name="buffer0")
    buf.push([{"data_id": f"collector_task_1_{i}", "priority": float(i + 1)} for i in range(12)], 0)  # 4 overwritten
    path = str(tmp_path / "parallel_buffer.dat")
    ids = save_buffer_state(path, {"buffer0": buf})
    assert ids == {f"collector_task_1_{i}" for i in range(4, 12)}
    states = load_buffer_state(path)
    assert referenced_data_ids(states) == ids
    restored = create_buffer(cfg, instance_name="buffer0")
    restored.load_state_dict(states["buffer0"])
    assert restored.count() == 8
    assert restored.state_dict()["storage"]["data"] == buf.state_dict()["storage"]["data"]


def test_missing_file_is_nothing_saved_and_a_foreign_file_is_refused(tmp_path):
    assert load_buffer_state(str(tmp_path / "none.dat")) == {}
    from ding.worker.replay_buffer.buffer_io import write_buffer_file

    path = str(tmp_path / "other.dat")
    write_buffer_file(path, "naive", [{"x": 1}])
    with pytest.raises(ReplayBufferError, match="pickled format of an older ding, which this ding does not unpickle"):
        load_buffer_state(path)
    from ding.torch_utils.codec import save_file

    save_file({"items": [1, 2]}, path)
    with pytest.raises(ReplayBufferError, match="holds no coordinator buffer state"):
        load_buffer_state(path)


class _Payload:
    def __reduce__(self):
        import os

        return (os.system, ("touch pwned",))


def test_a_planted_pickle_is_never_unpickled(tmp_path, monkeypatch):
    """Issue 36, item 13: parallel_buffer.dat was a pickle the coordinator loaded on --resume."""
    import os
    import pickle

    monkeypatch.chdir(tmp_path)
    from ding.worker.replay_buffer.buffer_io import _HEADER, MAGIC

    payload = pickle.dumps({"buffers": {"b": _Payload()}, "items": []})
    import zlib

    with open("parallel_buffer.dat", "wb") as f:
        f.write(MAGIC + _HEADER.pack(1, len(payload), zlib.crc32(payload)) + payload)
    with pytest.raises(ReplayBufferError, match="delete it to resume with an empty replay buffer"):
        load_buffer_state("parallel_buffer.dat")
    assert not os.path.exists("pwned")
    os.remove("parallel_buffer.dat")
    os.mkfifo("parallel_buffer.dat")
    with pytest.raises(ReplayBufferError, match="FIFO"):
        load_buffer_state("parallel_buffer.dat")
