"""The parallel learner's fast path: the policy writer thread (newest snapshot wins, never an older policy over a
newer one, a failed write stops training with its cause), learn tasks woken once with all their batches' infos, the
publishing cadence (send_policy_freq and send_policy_interval), and the role process's batch scheduling."""
from __future__ import annotations

import time

import pytest
import torch

from ding.parallel.files import read_policy
from ding.parallel.roles.learner.flask_fs import FlaskFileSystemLearner, PolicyPublisher, SendPolicyHook
from ding.parallel.roles.learner.trainer import _TaskSlot

pytestmark = pytest.mark.timeout(60)


def _model(value: float) -> dict:
    return {"w": torch.full((3, 2), value), "b": torch.full((2,), value)}


def test_publish_now_writes_at_once_and_publish_soon_writes_a_snapshot(tmp_path):
    path = str(tmp_path / "policy")
    pub = PolicyPublisher(path)
    try:
        pub.publish_now(_model(1.0), 0)
        assert pub.written_iter == 0 and read_policy(path)["iter"] == 0
        model = _model(2.0)
        pub.publish_soon(model, 10)
        model["w"].fill_(99.0)  # the training thread goes on changing its tensors: the snapshot is what is written
        deadline = time.monotonic() + 10
        while pub.written_iter != 10 and time.monotonic() < deadline:
            time.sleep(0.01)
        state = read_policy(path)
        assert state["iter"] == 10 and float(state["model"]["w"][0, 0]) == 2.0
        assert pub.handed_iter == 10
    finally:
        pub.close()


def test_an_older_snapshot_never_overwrites_a_newer_policy(tmp_path):
    path = str(tmp_path / "policy")
    pub = PolicyPublisher(path)
    try:
        pub.publish_now(_model(5.0), 50)
        pub._write(_model(4.0), 40)  # what the writer thread does with a snapshot it took before the final write
        assert read_policy(path)["iter"] == 50 and pub.written_iter == 50
    finally:
        pub.close()


def test_close_writes_what_is_queued(tmp_path):
    path = str(tmp_path / "policy")
    pub = PolicyPublisher(path)
    for i in range(1, 6):
        pub.publish_soon(_model(float(i)), i)
    pub.close()
    assert pub.written_iter == 5 and read_policy(path)["iter"] == 5
    pub.publish_soon(_model(9.0), 9)  # after close: ignored, no thread left behind
    assert pub.written_iter == 5


def test_a_failed_write_is_raised_by_the_next_publish(tmp_path):
    (tmp_path / "a_file").write_text("not a directory")
    pub = PolicyPublisher(str(tmp_path / "a_file" / "policy"))
    try:
        pub.publish_soon(_model(1.0), 1)
        assert pub._thread is not None
        pub._thread.join(10)
        with pytest.raises(RuntimeError, match=r"publishing the policy to .*a_file.* failed"):
            pub.publish_soon(_model(2.0), 2)
    finally:
        pub.close()


def test_a_learn_task_is_woken_once_when_its_last_batch_is_in():
    slot = _TaskSlot(3)
    sets = []
    original = slot.event.set
    slot.event.set = lambda: (sets.append(1), original())  # type: ignore[method-assign]
    for i in range(3):
        assert not slot.event.is_set()
        slot.add(i)
    assert slot.event.is_set() and sets == [1] and slot.infos == [0, 1, 2]


class _Engine:
    def __init__(self) -> None:
        self.train_iter = 0
        self.policy = self

    def state_dict(self) -> dict:
        return {"model": _model(float(self.train_iter))}


def test_policy_is_published_every_freq_iterations_at_most_every_interval(tmp_path):
    comm = FlaskFileSystemLearner({}, name="learner0", token="t" * 32)
    comm._publisher = PolicyPublisher(str(tmp_path / "policy"))
    try:
        comm.send_policy_freq, comm.send_policy_interval = 5, 0.0
        hook, engine = SendPolicyHook(comm), _Engine()
        comm._publisher.publish_now(engine.state_dict()["model"], 0)  # what the start task does
        handed = []
        for it in range(1, 21):
            engine.train_iter = it
            hook(engine)
            handed.append(comm.published_iter)
        assert sorted(set(handed) - {0}) == [5, 10, 15, 20]  # DI-engine's send_policy_freq
        comm.send_policy_interval = 3600.0  # now the time floor decides: nothing more within the hour
        for it in range(21, 41):
            engine.train_iter = it
            hook(engine)
        assert comm.published_iter == 20
    finally:
        comm._publisher.close()
        comm.close()
