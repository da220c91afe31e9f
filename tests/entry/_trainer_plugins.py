"""Episode callbacks for the Trainer tests (named in configs through import_names)."""
from __future__ import annotations

import os
import signal

from ding.utils import EPISODE_CALLBACK_REGISTRY
from ding.worker.collector import EpisodeCallback

CALLS: list[tuple] = []  # (method, details) in call order, for the test that reads them


@EPISODE_CALLBACK_REGISTRY.register("test_round_recorder")
class RoundRecorder(EpisodeCallback):
    """Records each round-level call with what it was given; adds keys to the result."""

    def on_postprocess_trajectory(self, env_id, trajectory, samples):
        CALLS.append(("on_postprocess_trajectory", env_id, len(trajectory), len(samples)))
        for s in samples:
            s["tagged"] = True
        return None

    def on_sample_end(self, samples):
        CALLS.append(("on_sample_end", len(samples), all(s.get("tagged") for s in samples)))

    def on_learn_on_batch(self, batch, train_iter, result):
        CALLS.append(("on_learn_on_batch", len(batch), train_iter))
        result["batch_seen"] = result.get("batch_seen", 0) + len(batch)

    def on_train_result(self, result):
        CALLS.append(("on_train_result", result["round"], result["train_iter"]))
        return {"recorder_round": result["round"]}


@EPISODE_CALLBACK_REGISTRY.register("test_raising_callback")
class RaisingCallback(EpisodeCallback):
    def __init__(self, method: str) -> None:
        self.method = method

    def _maybe_raise(self, name):
        if name == self.method:
            raise ValueError("boom from the test")

    def on_postprocess_trajectory(self, env_id, trajectory, samples):
        self._maybe_raise("on_postprocess_trajectory")

    def on_learn_on_batch(self, batch, train_iter, result):
        self._maybe_raise("on_learn_on_batch")

    def on_train_result(self, result):
        self._maybe_raise("on_train_result")


@EPISODE_CALLBACK_REGISTRY.register("test_sigint_at_iter")
class SigintAtIter(EpisodeCallback):
    """Sends SIGINT to this process once, before the learner's update at ``train_iter``."""

    def __init__(self, train_iter: int) -> None:
        self.train_iter = train_iter
        self.sent = False

    def on_learn_on_batch(self, batch, train_iter, result):
        if train_iter >= self.train_iter and not self.sent:
            self.sent = True
            os.kill(os.getpid(), signal.SIGINT)
