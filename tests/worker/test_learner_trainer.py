"""The learner role's trainer on its own: the records it takes and gives (ReadBatches in; DemandAnswer, LearnResult,
LearnerClosed out), a training error raised by the next call, a call before any start task refused."""
from __future__ import annotations

import logging

import pytest

from ding.parallel.protocol import LearnerDemand
from ding.parallel.roles.learner.batch_reader import ReadBatches
from ding.parallel.roles.learner.trainer import Trainer

pytestmark = pytest.mark.timeout(60)


class _Learner:
    """What the trainer uses of a BaseLearner: start() pulls batches from the trainer until it has none."""

    def __init__(self, trainer: Trainer, fail_at: int | None = None) -> None:
        self.trainer, self.fail_at = trainer, fail_at
        self.train_iter, self.ckpt_name, self.collector_envstep = 0, "ckpt.pth.tar", 0
        self.log_buffer = {"scalar": {"loss": 0.5}}
        self.seen: list = []
        self.closed = False

    def start(self) -> None:
        while (batch := self.trainer.next_batch(lambda: None)) is not None:
            if self.train_iter == self.fail_at:
                raise ValueError("a broken batch")
            self.seen.append(batch)
            self.train_iter += 1
            self.trainer.add_info({"learner_step": self.train_iter}, policy_iter=self.train_iter - 1)

    def request_stop(self) -> None:
        pass

    def close(self) -> None:
        self.closed = True


def _started(fail_at: int | None = None) -> tuple[Trainer, _Learner]:
    trainer = Trainer("learner0", logging.getLogger("test"))
    learner = _Learner(trainer, fail_at)
    trainer.start(learner, LearnerDemand(batch_size=2, n_batches=4))  # type: ignore[arg-type]
    return trainer, learner


def test_a_learn_tasks_batches_are_trained_in_order_and_answered_with_one_info_each():
    trainer, learner = _started()
    try:
        assert trainer.demand(1.0).demand == LearnerDemand(batch_size=2, n_batches=4)
        read = ReadBatches(sizes=[2, 0, 1], envstep=7, wait_s=10.0, skipped_files=1,
                           samples=[[{"x": 1}, {"x": 2}], [], [{"x": 3}]])
        result = trainer.train(read)
        assert [i.learner_step for i in result.infos] == [1, 2, 2]  # the empty batch: skipped, at the step answered
        assert [i.skipped for i in result.infos] == [False, True, False]
        assert result.trained == 3 and result.skipped_files == 1
        assert result.infos[0].stats == {"loss": 0.5} and result.infos[2].policy_iter == 1
        assert learner.seen == [[{"x": 1}, {"x": 2}], [{"x": 3}]] and learner.collector_envstep == 7
    finally:
        closed = trainer.stop(5.0)
    assert closed.learner_step == 2 and closed.trained == 2 and closed.ckpt_name == "ckpt.pth.tar"
    assert learner.closed and not trainer.training


def test_a_training_error_is_raised_by_the_next_call_with_its_cause():
    trainer, _ = _started(fail_at=0)
    try:
        with pytest.raises(RuntimeError, match="ValueError: a broken batch"):
            trainer.train(ReadBatches(sizes=[1], envstep=-1, wait_s=10.0, samples=[[{"x": 1}]]))
        with pytest.raises(RuntimeError, match="a broken batch"):
            trainer.demand(0.0)
    finally:
        trainer.stop(5.0)


def test_calls_before_a_start_task_name_the_missing_task():
    trainer = Trainer("learner3", logging.getLogger("test"))
    with pytest.raises(RuntimeError, match="learner 'learner3' has no learner task yet"):
        trainer.demand(0.0)
    assert trainer.stop(1.0).learner_step == 0
