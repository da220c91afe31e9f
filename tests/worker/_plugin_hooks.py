"""A learner-hook plugin module, imported by tests through a config's ``import_names`` (not imported directly)."""
from __future__ import annotations

from ding.worker.learner import LearnerHook, register_learner_hook

CALLS: list[tuple[str, int]] = []


class RecordIterHook(LearnerHook):
    """Records ``(name, train_iter)`` every call; ``ext_args.stop_at`` requests a stop at that iteration."""

    def __init__(self, *args, ext_args=None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._stop_at = (ext_args or {}).get("stop_at")

    def __call__(self, engine) -> None:
        CALLS.append((self.name, engine.train_iter))
        if self._stop_at is not None and engine.train_iter >= self._stop_at:
            engine.request_stop()


register_learner_hook("test_plugin_record_iter", RecordIterHook)
