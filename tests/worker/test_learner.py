"""BaseLearner: train step, priority info, checkpoints (atomic, rotation, damage, extras, resume), start loop."""
from __future__ import annotations

import logging
import os
from collections import namedtuple

import numpy as np
import pytest
import torch
from easydict import EasyDict

from ding.utils import CheckpointError
from ding.worker.learner import (
    CKPT_BEST_NAME,
    BaseLearner,
    LearnerHook,
    create_learner,
    find_latest_checkpoint,
    load_checkpoint_file,
)

LearnMode = namedtuple("LearnMode", ["forward", "reset", "monitor_vars", "get_attribute", "state_dict",
                                     "load_state_dict"])


def read_text(path: str) -> str:
    with open(path) as f:
        return f.read()


def read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


class FakeLearnPolicy:
    """nn.Linear regression + Adam; forward returns the loss (and priorities if asked)."""

    def __init__(self, in_dim: int = 4, out_dim: int = 2, priority: bool = False, seed: int = 0) -> None:
        torch.manual_seed(seed)
        self.model = torch.nn.Linear(in_dim, out_dim)
        self.target_model = torch.nn.Linear(in_dim, out_dim)
        self.optim = torch.optim.Adam(self.model.parameters(), lr=0.01)
        self.priority = priority
        self.cfg = EasyDict(type="fake", learn=dict(batch_size=4))

    def forward(self, data, **kwargs):
        x = torch.stack([torch.as_tensor(d["obs"]) for d in data])
        y = torch.stack([torch.as_tensor(d["target"]) for d in data])
        err = (self.model(x) - y).pow(2).mean(1)
        loss = err.mean()
        self.optim.zero_grad()
        loss.backward()
        self.optim.step()
        out = {"total_loss": loss.item(), "cur_lr": 0.01, "scale": kwargs.get("scale", 1.0)}
        if self.priority:
            out["priority"] = err.detach().numpy()
        return out

    def state_dict(self):
        return {"model": self.model.state_dict(), "target_model": self.target_model.state_dict(),
                "optimizer": self.optim.state_dict()}

    def load_state_dict(self, sd):
        self.model.load_state_dict(sd["model"])
        self.target_model.load_state_dict(sd["target_model"])
        self.optim.load_state_dict(sd["optimizer"])

    def get_attribute(self, name):
        return {"cfg": self.cfg, "batch_size": 4}[name]

    def mode(self) -> LearnMode:
        return LearnMode(self.forward, lambda *a, **k: None, lambda: ["total_loss", "cur_lr"], self.get_attribute,
                         self.state_dict, self.load_state_dict)


def make_batch(n: int = 4, seed: int = 0, meta: bool = False) -> list[dict]:
    rng = np.random.default_rng(seed)
    batch = [{"obs": rng.standard_normal(4).astype(np.float32), "target": rng.standard_normal(2).astype(np.float32)}
             for _ in range(n)]
    if meta:
        for i, d in enumerate(batch):
            d["replay_unique_id"] = f"id{i}"
            d["replay_buffer_idx"] = i
    return batch


def quiet_cfg(**hook) -> EasyDict:
    """Learner config with the periodic hooks off unless given."""
    h = dict(load_ckpt_before_run="", log_show_after_iter=0, save_ckpt_after_iter=0, save_ckpt_after_run=False)
    h.update(hook)
    return EasyDict(hook=h)


@pytest.fixture
def learner(in_tmp_dir):
    pol = FakeLearnPolicy()
    with BaseLearner(quiet_cfg(), pol.mode(), exp_name="exp") as lrn:
        lrn.fake = pol
        yield lrn


def test_default_config_keys_and_open_sections():
    cfg = BaseLearner.default_config()
    assert cfg.train_iterations == int(1e10)
    assert cfg.hook == dict(load_ckpt_before_run="", log_show_after_iter=100, save_ckpt_after_iter=10000,
                            save_ckpt_after_run=True)
    assert cfg.checkpoint.keep_last == 3 and cfg.dataloader.num_workers == 0 and cfg.log_policy is True
    assert BaseLearner.open_config_keys == ("hook", )
    assert cfg.cfg_type == "BaseLearnerDict"


def test_train_counts_iterations_and_logs(learner):
    out = learner.train(make_batch(), envstep=64, policy_kwargs={"scale": 3.0})
    assert learner.train_iter == 1 and learner.last_iter.val == 1
    assert learner.collector_envstep == 64
    assert out["scale"] == 3.0
    assert set(learner.log_buffer["scalar"]) == {"total_loss", "cur_lr", "scale", "train_time"}
    learner.train(make_batch())  # envstep=-1 keeps the last known env step
    assert learner.train_iter == 2 and learner.collector_envstep == 64
    assert learner.priority_info is None
    assert learner.learn_info == {"learner_step": 2, "priority_info": None, "learner_done": False}


def test_priority_info_with_and_without_meta_keys(in_tmp_dir):
    pol = FakeLearnPolicy(priority=True)
    with BaseLearner(quiet_cfg(), pol.mode(), exp_name="exp") as lrn:
        batch = make_batch(meta=True)
        out = lrn.train(batch)
        assert "priority" not in out
        info = lrn.priority_info
        assert info["replay_unique_id"] == ["id0", "id1", "id2", "id3"]
        assert info["replay_buffer_idx"] == [0, 1, 2, 3]
        assert np.asarray(info["priority"]).shape == (4, )
        lrn.train(make_batch())
        assert set(lrn.priority_info) == {"priority"}


def test_list_output_counts_one_iteration_per_minibatch(in_tmp_dir):
    seen = []

    class Rec(LearnerHook):
        def __call__(self, engine):
            seen.append((engine.train_iter, engine.log_buffer["scalar"]["total_loss"]))

    def forward(data, **kw):
        return [{"total_loss": 1.0}, {"total_loss": 2.0, "priority": np.ones(2)}]

    pol = FakeLearnPolicy()
    mode = pol.mode()._replace(forward=forward)
    with BaseLearner(quiet_cfg(), mode, exp_name="exp") as lrn:
        lrn.register_hook(Rec("rec", 50, position="after_iter"))
        lrn.train(make_batch(2))
        assert lrn.train_iter == 2
        assert seen == [(1, 1.0), (2, 2.0)]
        assert lrn.priority_info is not None


def test_train_errors(in_tmp_dir):
    with BaseLearner(quiet_cfg(), exp_name="exp") as lrn:
        with pytest.raises(RuntimeError, match="no policy set"):
            lrn.train(make_batch())
        lrn.policy = FakeLearnPolicy().mode()._replace(forward=lambda d, **k: 3.0)
        with pytest.raises(TypeError, match="must return a dict or a list of dicts"):
            lrn.train(make_batch())
        with pytest.raises(ValueError, match="unknown position 'after_iteration'; did you mean 'after_iter'"):
            lrn.call_hook("after_iteration")


def test_save_checkpoint_format_and_layout(learner):
    learner.train(make_batch(), envstep=128)
    path = learner.save_checkpoint()
    assert path == os.path.join(".", "exp", "ckpt", "iteration_1.pth.tar")
    assert learner.ckpt_name == "iteration_1.pth.tar"
    state = load_checkpoint_file(path)
    assert {"model", "target_model", "optimizer", "last_iter", "last_step", "meta"} <= set(state)
    assert state["last_iter"] == 1 and state["last_step"] == 128
    meta = state["meta"]
    assert set(meta) == {"ding_version", "config_hash", "train_iter", "envstep", "time"}
    assert meta["train_iter"] == 1 and meta["envstep"] == 128 and len(meta["config_hash"]) == 12
    assert [f for f in os.listdir(os.path.join("exp", "ckpt")) if f.endswith(".tmp")] == []


def test_save_is_atomic_when_writing_fails(learner, monkeypatch):
    path = learner.save_checkpoint("iteration_0.pth.tar")
    before = read_bytes(path)

    def broken_save(obj, f, *a, **k):
        f.write(b"partial")
        raise OSError("disk full")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError, match="disk full"):
        learner.save_checkpoint("iteration_0.pth.tar")
    assert read_bytes(path) == before
    assert os.listdir(os.path.dirname(path)) == ["iteration_0.pth.tar"]


def test_rotation_keeps_newest_and_best(in_tmp_dir):
    pol = FakeLearnPolicy()
    cfg = quiet_cfg()
    cfg.checkpoint = dict(keep_last=2)
    with BaseLearner(cfg, pol.mode(), exp_name="exp") as lrn:
        lrn.save_checkpoint(CKPT_BEST_NAME)
        for _ in range(4):
            lrn.train(make_batch())
            lrn.save_checkpoint()
        files = sorted(os.listdir(os.path.join("exp", "ckpt")))
        assert files == ["ckpt_best.pth.tar", "iteration_3.pth.tar", "iteration_4.pth.tar"]


def test_save_then_load_restores_outputs_and_counters(in_tmp_dir):
    pol = FakeLearnPolicy(seed=0)
    x = torch.randn(5, 4)
    with BaseLearner(quiet_cfg(), pol.mode(), exp_name="exp") as lrn:
        for i in range(3):
            lrn.train(make_batch(seed=i), envstep=100 * (i + 1))
        path = lrn.save_checkpoint()
        expected = pol.model(x).detach().clone()
        next_loss = lrn.train(make_batch(seed=9))["total_loss"]  # reference for bit-identical continuation

    fresh = FakeLearnPolicy(seed=123)
    assert not torch.allclose(fresh.model(x), expected)
    with BaseLearner(quiet_cfg(), fresh.mode(), exp_name="exp", instance_name="learner2") as lrn2:
        lrn2.load_checkpoint(path)
        assert torch.equal(fresh.model(x), expected)
        assert lrn2.train_iter == 3 and lrn2.collector_envstep == 300
        assert lrn2.train(make_batch(seed=9))["total_loss"] == next_loss  # optimizer state restored too


def test_load_from_directory_uses_newest(learner):
    learner.train(make_batch())
    learner.save_checkpoint()
    learner.train(make_batch())
    learner.save_checkpoint()
    learner.last_iter.update(0)
    learner.load_checkpoint(os.path.join("exp", "ckpt"))
    assert learner.train_iter == 2


def _truncate(path: str) -> None:
    data = read_bytes(path)
    with open(path, "wb") as f:
        f.write(data[:len(data) // 2])


@pytest.mark.parametrize("damage", ["truncate", "garbage", "empty"])
def test_damaged_checkpoint_raises_checkpoint_error_naming_file(learner, damage):
    path = learner.save_checkpoint()
    if damage == "truncate":
        _truncate(path)
    else:
        with open(path, "wb") as f:
            f.write(b"not a checkpoint at all" if damage == "garbage" else b"")
    with pytest.raises(CheckpointError, match=r"iteration_0\.pth\.tar.*truncated or corrupt"):
        learner.load_checkpoint(path)


def test_missing_and_foreign_checkpoint_files(learner):
    with pytest.raises(CheckpointError, match="nope.pth.tar' does not exist"):
        learner.load_checkpoint("nope.pth.tar")
    torch.save([1, 2, 3], "list.pth")
    with pytest.raises(CheckpointError, match="list.pth' holds a list"):
        learner.load_checkpoint("list.pth")
    os.makedirs("empty_dir")
    with pytest.raises(CheckpointError, match="no usable iteration_N.pth.tar checkpoint in directory 'empty_dir'"):
        learner.load_checkpoint("empty_dir")


def test_find_latest_skips_damaged_newest(learner, caplog):
    for _ in range(3):
        learner.train(make_batch())
        learner.save_checkpoint()
    ckpt_dir = os.path.join("exp", "ckpt")
    _truncate(os.path.join(ckpt_dir, "iteration_3.pth.tar"))
    with caplog.at_level(logging.WARNING):
        found = find_latest_checkpoint(ckpt_dir)
    assert found == os.path.join(ckpt_dir, "iteration_2.pth.tar")
    assert "using iteration_2, the last good checkpoint" in caplog.text
    assert "iteration_3.pth.tar" in caplog.text
    assert find_latest_checkpoint("does_not_exist") is None


def test_checkpoint_from_another_model_shape(in_tmp_dir):
    with BaseLearner(quiet_cfg(), FakeLearnPolicy(in_dim=4).mode(), exp_name="exp") as lrn:
        path = lrn.save_checkpoint()
    with BaseLearner(quiet_cfg(), FakeLearnPolicy(in_dim=6).mode(), exp_name="exp") as lrn2:
        msg = r"(?s)iteration_0\.pth\.tar' does not fit the policy.*size mismatch"
        with pytest.raises(CheckpointError, match=msg):
            lrn2.load_checkpoint(path)


def test_run_state_blob_keeps_values_dtypes_and_shared_objects():
    import io

    from ding.worker.learner.checkpoint import EXTRA_PICKLE_MAGIC, pack_extra, unpack_extra

    frame = bytes(range(256)) * 4  # one frame two stored stacks point at (a frame-sharing buffer)
    base = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    state = {"buffer": {"items": [{"obs": np.arange(3, dtype=np.float32), "frames": (frame, frame)},
                                  {"obs": torch.tensor([1, 2], dtype=torch.int64), "frames": (frame,)}]},
             "view": base.t(), "bf16": torch.tensor([1.5, -2.0], dtype=torch.bfloat16),
             "grad": torch.ones(2, requires_grad=True), "scalar": torch.tensor(True), "rng": torch.get_rng_state(),
             "plain": {"envstep": 7, "nan": float("nan")}}
    blob = pack_extra(state)
    assert blob.startswith(EXTRA_PICKLE_MAGIC)
    back = unpack_extra(blob)
    for key in ("view", "bf16", "grad", "scalar", "rng"):
        assert back[key].dtype == state[key].dtype and back[key].shape == state[key].shape
        assert torch.equal(back[key].detach(), state[key].detach()), key
    assert back["grad"].requires_grad and not back["view"].requires_grad
    back["view"] += 1  # a writable tensor, not a read-only view of the blob
    items = back["buffer"]["items"]
    assert items[0]["obs"].tolist() == [0.0, 1.0, 2.0] and items[1]["obs"].tolist() == [1, 2]
    assert items[0]["frames"][0] is items[0]["frames"][1] is items[1]["frames"][0]  # stored once, still shared
    assert back["plain"]["envstep"] == 7 and np.isnan(back["plain"]["nan"])
    old = io.BytesIO()  # a run state blob as earlier versions wrote it (torch.save) still loads
    torch.save({"collector": {"envstep": 3}, "t": base}, old)
    old_back = unpack_extra(old.getvalue())
    assert old_back["collector"] == {"envstep": 3} and torch.equal(old_back["t"], base)


def test_a_checkpoint_with_an_older_torch_save_run_state_resumes(learner, monkeypatch):
    import io

    import ding.worker.learner.checkpoint as ckpt

    box = {"envstep": 7}
    learner.register_checkpoint_extra("collector", lambda: dict(box), box.update)

    def torch_save_blob(extra):  # what pack_extra wrote before it used pickle
        f = io.BytesIO()
        torch.save(dict(extra), f)
        return f.getvalue()

    with monkeypatch.context() as m:
        m.setattr(ckpt, "pack_extra", torch_save_blob)
        path = learner.save_checkpoint()
    assert not load_checkpoint_file(path)["extra"].startswith(ckpt.EXTRA_PICKLE_MAGIC)
    box["envstep"] = 99
    learner.load_checkpoint(path, allow_pickle=True)  # the run's own file, on purpose
    assert box["envstep"] == 7


def test_extra_state_round_trip_and_not_in_best(learner, caplog):
    box = {"envstep": 7, "rng": [1, 2]}
    learner.register_checkpoint_extra("collector", lambda: dict(box), box.update)
    with pytest.raises(ValueError, match="'collector' is already registered"):
        learner.register_checkpoint_extra("collector", dict, print)
    path = learner.save_checkpoint()
    best = learner.save_checkpoint(CKPT_BEST_NAME)
    assert isinstance(load_checkpoint_file(path)["extra"], bytes)  # tensors-only: the run state stays a blob
    assert load_checkpoint_file(path, allow_pickle=True)["extra"] == {"collector": {"envstep": 7, "rng": [1, 2]}}
    assert "extra" not in load_checkpoint_file(best)
    box["envstep"] = 99
    learner.load_checkpoint(path)  # as weights: the run state is not read
    assert box["envstep"] == 99
    learner.load_checkpoint(path, allow_pickle=True)
    assert box == {"envstep": 7, "rng": [1, 2]}
    learner.register_checkpoint_extra("buffer", dict, lambda s: None)
    learner.load_checkpoint(path, allow_pickle=True)
    assert "has no extra state 'buffer'" in read_text(os.path.join("exp", "log", "learner", "learner_logger.txt"))

    def bad_set(state):
        raise KeyError("field")

    learner.register_checkpoint_extra("collector", dict, bad_set, replace=True)
    with pytest.raises(CheckpointError, match="restoring extra state 'collector' failed"):
        learner.load_checkpoint(path, allow_pickle=True)


def test_save_checkpoint_needs_no_hook(in_tmp_dir):
    cfg = quiet_cfg()
    with BaseLearner(cfg, FakeLearnPolicy().mode(), exp_name="exp") as lrn:
        assert all(len(v) == 0 for v in lrn.hooks.values())
        assert os.path.exists(lrn.save_checkpoint("manual.pth.tar"))


def test_start_loop_with_get_data_hooks_and_limits(in_tmp_dir):
    pol = FakeLearnPolicy()
    cfg = quiet_cfg(save_ckpt_after_run=True)
    cfg.train_iterations = 5
    with BaseLearner(cfg, pol.mode(), exp_name="exp") as lrn:
        calls = []
        lrn.get_data = lambda bs: calls.append(bs) or [(lambda i=i: make_batch(1, seed=i)[0]) for i in range(bs)]
        lrn.start()
        assert lrn.train_iter == 5 and calls == [4] * 5
        assert lrn.learn_info["learner_done"] is True
        assert os.path.exists(os.path.join("exp", "ckpt", "iteration_5.pth.tar"))


@pytest.mark.parametrize("num_workers", [0, 1])
def test_start_ends_when_data_ends(in_tmp_dir, num_workers):
    pol = FakeLearnPolicy()
    cfg = quiet_cfg()
    cfg.dataloader = dict(num_workers=num_workers)
    batches = [make_batch(seed=i) for i in range(3)]
    with BaseLearner(cfg, pol.mode(), exp_name="exp",
                     data_source=lambda bs: batches.pop(0) if batches else None) as lrn:
        lrn.start()
        assert lrn.train_iter == 3


def test_directories_and_data_source_come_through_the_constructor(in_tmp_dir):
    pol = FakeLearnPolicy()
    cfg = quiet_cfg(save_ckpt_after_run=True)
    cfg.train_iterations = 2
    with BaseLearner(cfg, pol.mode(), exp_name="exp", data_source=lambda bs: make_batch(seed=0),
                     ckpt_dir=os.path.join("elsewhere", "ck"), log_dir=os.path.join("logs", "l0")) as lrn:
        lrn.start()
    assert os.path.exists(os.path.join("elsewhere", "ck", "iteration_2.pth.tar"))
    assert os.path.exists(os.path.join("logs", "l0", "learner_logger.txt"))
    assert not os.path.exists("exp")


def test_start_without_data_source_errors(learner):
    with pytest.raises(RuntimeError, match="no data source"):
        learner.start()


def test_close_is_idempotent_and_owned_tb_closed(in_tmp_dir):
    lrn = BaseLearner(quiet_cfg(), FakeLearnPolicy().mode(), exp_name="exp")
    assert lrn.tb_logger is not None
    lrn.close()
    lrn.close()
    assert os.path.isdir(os.path.join("exp", "log", "learner"))


def test_passed_tb_logger_is_not_closed(in_tmp_dir):
    class Tb:
        closed = flushed = False

        def flush(self):
            self.flushed = True

        def close(self):
            self.closed = True

    tb = Tb()
    BaseLearner(quiet_cfg(), FakeLearnPolicy().mode(), tb_logger=tb, exp_name="exp").close()
    assert tb.flushed and not tb.closed


def test_create_learner_from_registry(in_tmp_dir):
    with create_learner(EasyDict(type="base", hook=quiet_cfg().hook), exp_name="exp") as lrn:
        assert type(lrn) is BaseLearner and lrn.exp_name == "exp" and lrn.instance_name == "learner"
        assert lrn.rank == 0 and lrn.world_size == 1


def _dqn(hidden, seed):
    from ding.policy import DQNPolicy

    torch.manual_seed(seed)
    cfg = EasyDict(type="dqn", model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=hidden))
    return DQNPolicy(cfg, enable_field=["learn", "eval"])


def _dqn_batch(n=8, seed=0):
    rng = np.random.default_rng(seed)
    return [{"obs": rng.standard_normal(4).astype(np.float32), "next_obs": rng.standard_normal(4).astype(np.float32),
             "action": np.int64(rng.integers(2)), "reward": np.ones(1, np.float32), "done": False} for _ in range(n)]


def test_real_dqn_save_load_restores_q_values_and_rejects_other_shapes(in_tmp_dir):
    obs = {i: np.random.default_rng(i).standard_normal(4).astype(np.float32) for i in range(3)}
    pol = _dqn([32, 32], seed=0)
    with BaseLearner(quiet_cfg(), pol.learn_mode, exp_name="exp") as lrn:
        for i in range(5):
            lrn.train(_dqn_batch(seed=i), envstep=8 * i)
        path = lrn.save_checkpoint()
    q = {i: o["logit"] for i, o in pol.eval_mode.forward(obs).items()}

    fresh = _dqn([32, 32], seed=1)
    assert not np.allclose(fresh.eval_mode.forward(obs)[0]["logit"], q[0])
    with BaseLearner(quiet_cfg(), fresh.learn_mode, exp_name="exp", instance_name="l2") as lrn2:
        lrn2.load_checkpoint(path)
        assert lrn2.train_iter == 5 and lrn2.collector_envstep == 32
    for i, o in fresh.eval_mode.forward(obs).items():
        np.testing.assert_array_equal(o["logit"], q[i])

    other = _dqn([64, 64], seed=0)
    with BaseLearner(quiet_cfg(), other.learn_mode, exp_name="exp", instance_name="l3") as lrn3:
        with pytest.raises(CheckpointError, match=r"iteration_5\.pth\.tar' does not fit the policy"):
            lrn3.load_checkpoint(path)


class _Payload:
    """What a hostile checkpoint holds: unpickling it runs code."""

    def __reduce__(self):
        return (os.system, ("touch pwned",))


def test_checkpoints_load_tensors_only_unless_the_run_state_is_its_own(learner):
    """Issue 16, fault class 6: a checkpoint with pickled objects is refused by every tensors-only reader (eval,
    load_policy, the parallel learner, load_ckpt_before_run); only an explicit allow_pickle (resume) unpickles."""
    import torch

    path = learner.save_checkpoint()
    state = load_checkpoint_file(path)
    state["evil"] = _Payload()
    torch.save(state, "exp/ckpt/iteration_5.pth.tar")
    with pytest.raises(CheckpointError, match=r"iteration_5\.pth\.tar' holds pickled objects besides tensors "
                                              r"\(posix\.system\)"):
        load_checkpoint_file("exp/ckpt/iteration_5.pth.tar")
    with pytest.raises(CheckpointError, match="holds pickled objects"):
        learner.load_checkpoint("exp/ckpt/iteration_5.pth.tar")  # no run state registered: tensors only
    assert os.path.samefile(find_latest_checkpoint("exp/ckpt"), path)  # the crafted newer file is skipped
    assert not os.path.exists("pwned")
    restored = []
    learner.register_checkpoint_extra("collector", lambda: {"envstep": 3}, restored.append)
    path = learner.save_checkpoint()
    learner.load_checkpoint(path)  # weights: the run state stays an opaque blob, even with extras registered
    assert restored == []
    learner.load_checkpoint(path, allow_pickle=True)  # asked for on purpose (your own file)
    assert restored == [{"envstep": 3}]


def test_best_checkpoint_of_serial_and_parallel_runs(in_tmp_dir):
    from ding.worker import COLLECTOR_CKPT_DIR, best_checkpoint

    assert best_checkpoint("run") is None
    os.makedirs(os.path.join("run", COLLECTOR_CKPT_DIR))
    parallel = os.path.join("run", COLLECTOR_CKPT_DIR, CKPT_BEST_NAME)
    open(parallel, "wb").close()
    assert best_checkpoint("run") == parallel  # a parallel run: the collectors' best, outside ckpt/
    os.makedirs(os.path.join("run", "ckpt"))
    open(os.path.join("run", "ckpt", CKPT_BEST_NAME), "wb").close()
    assert best_checkpoint("run") == os.path.join("run", "ckpt", CKPT_BEST_NAME)
