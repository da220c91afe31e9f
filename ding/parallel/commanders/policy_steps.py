"""The env steps each published policy was trained with, so an evaluation is recorded where serial mode records it
(not at the later count when its result arrives, which would credit the policy with data it never trained on)."""
from __future__ import annotations

import bisect


class PolicySteps:
    """(published policy iteration, env steps collected by then), ascending; evaluations ask in that order."""

    def __init__(self) -> None:
        self._steps: list[tuple[int, int]] = []

    def published(self, policy_iter: int, envstep: int) -> None:
        self._steps.append((policy_iter, envstep))
        if len(self._steps) > 4096:  # no evaluation for long: older policies map to a later (higher) count
            del self._steps[:2048]

    def clear(self) -> None:
        """A restarted learner's iterations may go back."""
        self._steps.clear()

    def of(self, policy_iter: int, envstep: int) -> int:
        """The env steps collected when ``policy_iter`` was published, at most ``envstep`` (the count now; also the
        answer for a policy not heard of yet)."""
        i = bisect.bisect_left(self._steps, (policy_iter, -1))
        step = self._steps[i][1] if i < len(self._steps) else envstep
        del self._steps[:i]  # evaluations go forward: older policies are not asked for again
        return min(step, envstep)
