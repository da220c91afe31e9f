"""Crafted files in parallel mode's shared directory (fault class 3 of issue 16), through the real reading paths of a
comm learner and a comm collector driven over loopback: each crafted data file is one skipped sample and training
goes on; each crafted policy file fails that one collector task with an error naming it, and the next task works."""
from __future__ import annotations

import copy
import io
import json
import os
import pickle
import zipfile
import zlib

import numpy as np
import pytest
import torch

from ding.parallel.files import read_policy, to_columns, write_data, write_policy, write_samples
from ding.parallel.protocol import EvalTask
from ding.parallel.transport import TaskFailed
from ding.torch_utils.codec import _HEAD, _LEN, MAGIC
from ding.worker import FlaskFileSystemCollector, FlaskFileSystemLearner

from .test_comm_workers import TOKEN, _join, _started_learner, _transition, main_json, master  # noqa: F401

pytestmark = pytest.mark.timeout(120)


def _crafted(header: object) -> bytes:
    raw = json.dumps(header).encode() if not isinstance(header, bytes) else header
    body = zlib.compress(_LEN.pack(len(raw)) + raw, 1)
    return _HEAD.pack(MAGIC, 1, zlib.crc32(body)) + body


def _plant_crafted_data(path_data: str) -> list[str]:
    """One file per kind of crafted data file; returns their ids."""
    with open(os.path.join(path_data, "bad_structure"), "wb") as f:
        f.write(_crafted({"tree": {"$d": [1, 2, 3]}, "blobs": []}))  # once an AttributeError past the except
    with open(os.path.join(path_data, "deep"), "wb") as f:
        f.write(_crafted(b'{"tree":' + b"[" * 50_000 + b"]" * 50_000 + b',"blobs":[]}'))  # once a RecursionError
    with open(os.path.join(path_data, "huge_array"), "wb") as f:  # a 1 GiB array claimed by a few bytes
        f.write(_crafted({"tree": {"$d": {"obs": {"$a": 0}}}, "blobs": [["<f4", [1 << 28], 0]]}))
    with open(os.path.join(path_data, "bomb"), "wb") as f:  # 64 MiB of zeros in ~64 KiB, over a 16 MiB limit
        body = zlib.compress(_LEN.pack(2) + b"{}" + bytes(64 << 20), 9)
        f.write(_HEAD.pack(MAGIC, 1, zlib.crc32(body)) + body)
    os.mkfifo(os.path.join(path_data, "fifo"))  # once a reader blocked for good
    os.symlink("/dev/zero", os.path.join(path_data, "zero_link"))  # once an endless read
    with open(os.path.join(path_data, "pickled"), "wb") as f:
        f.write(pickle.dumps({"obs": np.zeros(4)}))
    return ["bad_structure", "deep", "huge_array", "bomb", "fifo", "zero_link", "pickled"]


def test_learner_skips_each_crafted_data_file_and_keeps_training(main_json, master):  # noqa: F811
    learner, conn, paths = _started_learner(master, main_json, {"max_data_file_mb": 16})  # (decoded: 16 MiB too)
    try:
        for i in range(8):
            write_data(paths["path_data"], f"d{i}", _transition(i))
        crafted = _plant_crafted_data(paths["path_data"])
        ids = [f"d{i}" for i in range(4)] + crafted + [f"d{i}" for i in range(4, 8)]
        meta = [[{"data_id": d, "replay_unique_id": i, "replay_buffer_idx": i, "IS": 1.0}
                 for i, d in enumerate(ids[k:k + 5])] for k in range(0, len(ids), 5)]
        out = master.new_task(conn, "learner_learn_task", {"data": [to_columns(b) for b in meta], "envstep": 10,
                                                           "wait_s": 60},
                              deadline_s=90).result(90)
        assert out["skipped_files"] == len(crafted)
        # the batch of crafted files only is answered as skipped; the two with good samples train
        assert [bool(i.get("skipped")) for i in out["infos"]] == [False, True, False]
        assert out["infos"][-1]["learner_step"] == 2
        # a bad file is remembered (data files never change): not read again, even if it is replaced
        write_data(paths["path_data"], "bad_structure", _transition(9))
        batch = [{"data_id": d, "IS": 1.0} for d in ("d0", "d1", "d2", "bad_structure")]
        again = master.new_task(conn, "learner_learn_task", {"data": [to_columns(batch)], "envstep": 10,
                                                             "wait_s": 30}, deadline_s=40).result(40)
        assert again["trained"] == 1 and again["skipped_files"] == 1
        assert again["infos"][0]["learner_step"] == 3  # the training thread is alive and counting
    finally:
        learner.close()


def test_learner_trains_on_a_tasks_data_file_and_skips_ids_its_files_do_not_hold(main_json, master):  # noqa: F811
    from ding.torch_utils import save_file

    learner, conn, paths = _started_learner(master, main_json)
    try:
        ids = write_samples(paths["path_data"], "collector_task_1_0", [_transition(i) for i in range(6)])
        write_data(paths["path_data"], "single", _transition(7))
        save_file([1, 2], os.path.join(paths["path_data"], "not_samples"))
        # a sample index on a one-sample file, an index past the list, a list of non-samples, a file for a list
        wrong = ["single:0", "collector_task_1_0:6", "not_samples:0", "collector_task_1_0"]
        batches = [[{"data_id": d, "IS": 1.0} for d in ids], [{"data_id": d, "IS": 1.0} for d in wrong]]
        out = master.new_task(conn, "learner_learn_task", {"data": [to_columns(b) for b in batches], "envstep": 6,
                                                           "wait_s": 60}, deadline_s=90).result(90)
        assert out["skipped_files"] == len(wrong) and out["trained"] == 2
        assert sorted(bool(i.get("skipped")) for i in out["infos"]) == [False, True]  # (in the order they ended)
        assert max(i["learner_step"] for i in out["infos"]) == 1
    finally:
        learner.close()


def _zip_with(records: dict[str, bytes], compress: int) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=compress) as z:
        for name, data in records.items():
            z.writestr(name, data)
    return buf.getvalue()


class Payload:
    def __reduce__(self):
        return (os.system, ("touch pwned",))


def test_read_policy_refuses_crafted_policy_files(in_tmp_dir):
    from ding.torch_utils import encode
    from ding.utils import DataFileError

    model = {"w": torch.zeros(3)}
    write_policy("good", model, 3)
    assert read_policy("good")["iter"] == 3
    assert read_policy("missing") is None
    torch.save(Payload(), "code")  # a pickle that would run code if it were unpickled
    torch.save({"model": model, "iter": 1}, "torch_zip")  # torch.save's format: never unpickled either
    os.mkfifo("fifo")
    os.symlink("/dev/zero", "link")
    for name, obj in (("extra_key", {"model": model, "iter": 1, "extra": 2}),
                      ("not_tensors", {"model": {"w": [1, 2]}, "iter": 1}),
                      ("bool_iter", {"model": model, "iter": True})):
        with open(name, "wb") as f:
            f.write(encode(obj, compress=False))
    with open("bomb", "wb") as f:  # a small file that decompresses to 8 MiB
        f.write(encode({"model": {"w": np.zeros(1 << 21, dtype=np.float32)}, "iter": 1}, compress=True))
    cases = {"code": "not a ding data file", "torch_zip": "not a ding data file", "fifo": "is a FIFO",
             "link": "is a symbolic link", "extra_key": "exactly the keys", "bool_iter": "exactly the keys",
             "not_tensors": "must map parameter names to tensors", "bomb": "decompresses to more than",
             "good": "over the limit of 100 bytes"}
    for name, match in cases.items():
        with pytest.raises(DataFileError, match=match):
            read_policy(name, max_bytes=100 if name == "good" else 1 << 20)
    assert os.path.getsize("bomb") < 1 << 20  # the bomb is refused for what it expands to, not for its size
    assert not os.path.exists("pwned")


def test_policy_file_round_trip_keeps_names_dtypes_and_values(in_tmp_dir):
    state = {"a.weight": torch.randn(3, 4), "a.bias": torch.randn(4), "steps": torch.tensor(7),
             "mask": torch.tensor([True, False]), "half": torch.randn(2).half()}
    write_policy("p", state, 12)
    got = read_policy("p")
    assert got["iter"] == 12 and list(got["model"]) == list(state)
    for k, v in state.items():
        assert got["model"][k].dtype == v.dtype and torch.equal(got["model"][k], v)
    with pytest.raises(TypeError, match="bfloat16 cannot be stored"):
        write_policy("q", {"w": torch.zeros(2, dtype=torch.bfloat16)}, 1)
    assert not os.path.exists("q")


def test_collector_task_fails_on_a_crafted_policy_file_then_recovers(main_json, master):  # noqa: F811
    from ding.policy import create_policy

    collector = FlaskFileSystemCollector({}, name="collector0", token=TOKEN)
    try:
        conn = _join(master, collector)
        os.makedirs("./w/policy")
        policy = create_policy(copy.deepcopy(main_json["policy"]), enable_field=["learn"])
        good = policy.learn_mode.state_dict()["model"]
        write_policy("./w/policy/policy", good, 1)
        master.new_task(conn, "collector_start_task", dict(
            main_config=main_json, path_data="./w/data", path_policy="./w/policy", policy_id="policy", seed=5),
            deadline_s=60).result(60)
        task = EvalTask(task_id="collector_task_1", buffer_id="b0", policy_id="policy", train_iter=1).to_json()
        os.replace("./w/policy/policy", "./w/good")
        os.symlink("/dev/zero", "./w/policy/policy")
        with pytest.raises(TaskFailed, match="policy file './w/policy/policy' is a symbolic link"):
            master.new_task(conn, "collector_data_task", task, deadline_s=30).result(30)
        os.unlink("./w/policy/policy")
        wrong = {k: torch.zeros(2, 2) for k in good}
        write_policy("./w/policy/policy", wrong, 2)
        with pytest.raises(TaskFailed, match=r"policy file './w/policy/policy': '.*' is torch.float32\(2, 2\)"):
            master.new_task(conn, "collector_data_task", task, deadline_s=30).result(30)
        os.replace("./w/good", "./w/policy/policy")
        out = master.new_task(conn, "collector_data_task", task, deadline_s=30).result(30)
        assert out["eval_flag"] and out["policy_iter"] == 1
    finally:
        collector.close()


def test_peer_paths_and_ids_are_confined_to_the_run_directories(tmp_path):
    from ding.parallel.files import learner_load_path, policy_path, run_dir
    from ding.utils import DataFileError

    assert policy_path("p", "policy") == os.path.join("p", "policy")
    for bad in ("../x", "a/b", "..", "", None, 3):
        with pytest.raises(DataFileError, match="invalid policy id"):
            policy_path("p", bad)
    assert run_dir("./w/data", None, "t.path_data") == "./w/data"  # no expectation: any path string
    assert run_dir("./w/data", "w/data", "t.path_data") == "./w/data"
    with pytest.raises(DataFileError, match=r"t\.path_data: '/etc' is not this run's directory 'w/data'"):
        run_dir("/etc", "w/data", "t.path_data")
    with pytest.raises(DataFileError, match="expected a directory path"):
        run_dir(["w"], None, "t.path_data")
    ckpt = str(tmp_path / "exp" / "ckpt")
    assert learner_load_path(None, ckpt) is None and learner_load_path(ckpt + "/", ckpt) == ckpt
    assert learner_load_path(ckpt + "/iteration_3.pth.tar", ckpt) == os.path.join(ckpt, "iteration_3.pth.tar")
    for bad in (str(tmp_path / "exp" / "collector_ckpt" / "ckpt_best.pth.tar"), ckpt + "/ckpt_best.pth.tar",
                ckpt + "/../ckpt2", "/tmp/iteration_1.pth.tar"):
        with pytest.raises(DataFileError, match="the learner loads only checkpoints it wrote itself"):
            learner_load_path(bad, ckpt)
    os.makedirs(ckpt)
    os.symlink(tmp_path / "evil.pth.tar", os.path.join(ckpt, "iteration_9.pth.tar"))  # a planted link: refused
    with pytest.raises(DataFileError, match="loads only checkpoints it wrote itself"):
        learner_load_path(os.path.join(ckpt, "iteration_9.pth.tar"), ckpt)


def test_roles_refuse_start_tasks_naming_other_directories(main_json, master):  # noqa: F811
    learner = FlaskFileSystemLearner({"path_data": "./w/data", "path_policy": "./w/policy"}, name="learner0",
                                     token=TOKEN)
    collector = FlaskFileSystemCollector({"path_data": "./w/data", "path_policy": "./w/policy"}, name="collector0",
                                         token=TOKEN)
    try:
        lconn = _join(master, learner)
        cconn = _join(master, collector)
        base = dict(task_id="t0", main_config=main_json, path_data="./w/data", path_policy="./w/policy",
                    policy_id="policy", buffer_id="b0", seed=0, load_path=None)
        for change, match in ((dict(path_data="/tmp"), "path_data: '/tmp' is not this run's directory"),
                              (dict(policy_id="../../x"), "invalid policy id"),
                              (dict(load_path="./w/collector_ckpt/ckpt_best.pth.tar"), "load_path.*wrote itself")):
            with pytest.raises(TaskFailed, match=match):
                master.new_task(lconn, "learner_start_task", dict(base, **change), deadline_s=60).result(60)
            if "load_path" not in change:
                with pytest.raises(TaskFailed, match=match):
                    master.new_task(cconn, "collector_start_task", dict(base, **change), deadline_s=60).result(60)
        started = master.new_task(lconn, "learner_start_task", base, deadline_s=60).result(60)
        assert started["learner_step"] == 0
    finally:
        collector.close()
        learner.close()


def _learn(master, conn, batches):  # noqa: F811
    """One learn task of ``batches`` (lists of metadata dicts); its answer."""
    return master.new_task(conn, "learner_learn_task", {"data": [to_columns(b) for b in batches], "envstep": 8,
                                                        "wait_s": 60}, deadline_s=90).result(90)


def _store_of(compiled: dict, samples: int) -> dict:
    """``compiled`` (a main config as JSON) with a replay buffer of ``samples``: the learner's sample store is that
    size."""
    out = copy.deepcopy(compiled)
    out["policy"]["other"]["replay_buffer"]["replay_buffer_size"] = samples
    return out


@pytest.mark.parametrize("cache", [0, 3])
def test_a_sample_store_smaller_than_a_learn_task_still_trains_every_batch(main_json, master, cache,  # noqa: F811
                                                                          monkeypatch):
    if cache == 0:  # no store at all: the A/B benchmark's toggle (ding/parallel/mechanisms.py)
        monkeypatch.setenv("DING_PARALLEL_OFF", "sample_cache")
    learner, conn, paths = _started_learner(master, _store_of(main_json, cache or 5000))
    try:
        ids = [i for f in range(3) for i in write_samples(paths["path_data"], f"collector_task_{f}_0",
                                                          [_transition(4 * f + j) for j in range(4)])]


        first = _learn(master, conn, [[{"data_id": d, "IS": 1.0} for d in ids[:4]]])  # the store keeps file 0's last 3
        # the first batch is kept, the next two read files 1 and 2, which push file 0 out of a 3-sample store
        out = _learn(master, conn, [[{"data_id": d, "IS": 1.0} for d in ids[1:4]],
                                    [{"data_id": d, "IS": 1.0} for d in ids[4:8]],
                     [{"data_id": d, "IS": 1.0} for d in ids[8:]]])
        assert first["trained"] == 1 and out["trained"] == 3 and out["skipped_files"] == 0
        assert [i["learner_step"] for i in out["infos"]] == [2, 3, 4]
    finally:
        learner.close()


def test_samples_let_go_during_a_task_whose_file_is_gone_are_skipped(main_json, master):  # noqa: F811
    learner, conn, paths = _started_learner(master, _store_of(main_json, 3))
    try:
        ids = [i for f in range(2) for i in write_samples(paths["path_data"], f"collector_task_{f}_0",
                                                          [_transition(4 * f + j) for j in range(4)])]


        _learn(master, conn, [[{"data_id": d, "IS": 1.0} for d in ids[:4]]])  # the store keeps file 0's last 3
        os.remove(os.path.join(paths["path_data"], "collector_task_0_0"))
        out = _learn(master, conn, [[{"data_id": d, "IS": 1.0} for d in ids[1:4]],
                                    [{"data_id": d, "IS": 1.0} for d in ids[4:]]])
        assert out["skipped_files"] == 3 and [bool(i.get("skipped")) for i in out["infos"]] == [True, False]
        assert out["infos"][-1]["learner_step"] == 2
    finally:
        learner.close()
