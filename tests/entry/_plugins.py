"""Hook plugins the pipeline tests load by type name through ``import_names``."""
from __future__ import annotations

import time

from ding.worker import LearnerHook, register_learner_hook

CALLS: list[str] = []


class SlowDownHook(LearnerHook):
    """Sleeps a little after each iteration so a test can interrupt a run mid-way. Changes no state."""

    def __init__(self, *args, ext_args: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.seconds = (ext_args or {}).get("seconds", 0.005)

    def __call__(self, engine) -> None:
        time.sleep(self.seconds)


class StopAtIterHook(LearnerHook):
    """Requests a stop once ``train_iter`` reaches ``ext_args['iter']``."""

    def __init__(self, *args, ext_args: dict | None = None, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.at = (ext_args or {}).get("iter", 10)

    def __call__(self, engine) -> None:
        CALLS.append(f"{self.position}:{engine.train_iter}")
        if self.position == "after_iter" and engine.train_iter >= self.at:
            engine.request_stop()


register_learner_hook("test_slow_down", SlowDownHook)
register_learner_hook("test_stop_at_iter", StopAtIterHook)
