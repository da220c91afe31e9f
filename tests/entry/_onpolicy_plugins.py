"""An episode-callback plugin for the on-policy pipeline tests (imported through a config's ``import_names``)."""
from __future__ import annotations

import os
import signal

from ding.utils import EPISODE_CALLBACK_REGISTRY
from ding.worker.collector import EpisodeCallback


@EPISODE_CALLBACK_REGISTRY.register("test_sigint_at_envstep")
class SigintAtEnvstep(EpisodeCallback):
    """Sends this process one SIGINT (a Ctrl-C) during the collect that passes ``envstep``: the run then stops with
    collected data it has not trained on yet."""

    def __init__(self, envstep: int = 1000) -> None:
        self.envstep = envstep
        self.sent = False

    def setup(self, collector) -> None:
        self.collector = collector

    def on_sample_end(self, samples: list) -> list | None:
        if not self.sent and self.collector.envstep >= self.envstep:
            self.sent = True
            os.kill(os.getpid(), signal.SIGINT)
        return None
