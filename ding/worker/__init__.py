"""Workers: collectors and evaluators, the learner and its hooks, replay buffers, commanders."""
from . import collector, coordinator, learner, replay_buffer
from .collector import *  # noqa: F401,F403
from .coordinator import *  # noqa: F401,F403
from .learner import *  # noqa: F401,F403
from .replay_buffer import *  # noqa: F401,F403

__all__ = [*collector.__all__, *coordinator.__all__, *learner.__all__, *replay_buffer.__all__]
