"""Pacing: the serial replay ratio in parallel mode (docs/parallel.md, Pacing): the learner trains while ``served <
ratio * pushed``, collectors collect while ``pushed + in flight < served / ratio + ahead``; the caller holds a lock."""
from __future__ import annotations

EVAL_LEAD = 2  # eval_freq periods the learner may train past the last evaluation handed out before it waits


class Pacing:
    def __init__(self, ratio: float, batch_size: int, n_sample: int, ahead: int | None,
                 eval_lead_batches: float) -> None:
        if ahead is not None and ahead < batch_size:  # the learner trains only on a full batch: both would wait
            raise ValueError(f"Pacing: ahead={ahead} is below a batch ({batch_size}); collection and training would "
                             "wait for each other for ever")
        self.ratio = ratio  # batches per sample; 0: no pacing
        self.batch_size = batch_size
        self.n_sample = n_sample
        self.ahead = ahead  # samples collection may run ahead; None: derived from the collectors
        self.eval_lead_batches = eval_lead_batches  # 0: the learner never waits for an evaluation
        self.pushed = 0
        self.served = 0
        self.served_at_eval = 0  # batches served when the last evaluation was handed out
        self._in_flight: dict[str, int] = {}  # collect task id -> samples it will bring

    def learner_may_train(self, buffer_count: int, eval_can_come: bool) -> bool:
        """One more batch now? Needs a full batch in the buffer, no due evaluation to wait for, and the ratio."""
        if buffer_count < self.batch_size or (eval_can_come and self.past_eval_lead()):
            return False
        return self.ratio == 0 or self.served < self.ratio * self.pushed

    def past_eval_lead(self) -> bool:
        """The learner is ``eval_lead_batches`` batches past the last evaluation handed out."""
        return 0 < self.eval_lead_batches <= self.served - self.served_at_eval

    def collect_allowed(self, collectors: int) -> bool:
        if self.ratio == 0:
            return True
        ahead = self.ahead
        if ahead is None:  # two tasks per collector (one running, one waiting) bound the policy lag; at least a batch
            ahead = max(self.batch_size, 2 * self.n_sample * max(1, collectors))
        planned = self.pushed + sum(self._in_flight.values())
        return planned < self.served / self.ratio + ahead

    def batch_served(self) -> None:
        self.served += 1

    def evaluation_handed_out(self) -> None:
        self.served_at_eval = self.served

    def collect_sent(self, task_id: str) -> None:
        self._in_flight[task_id] = self.n_sample

    def collect_ended(self, task_id: str, samples: int = 0) -> None:
        """A collect task finished (bringing ``samples``) or failed (0)."""
        self._in_flight.pop(task_id, None)
        self.pushed += samples
