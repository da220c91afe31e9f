"""CartPole whose every step costs a set amount of time: the benchmark env of parallel mode.

``step_cost_kind='cpu'`` spends ``step_cost_ms`` of CPU time per step in a pure-Python loop that holds the GIL, as a
simulator written in Python would; it counts the thread's CPU time (``time.thread_time``), so on a loaded machine a
step still costs that much work, and takes longer on the wall clock. ``step_cost_kind='wait'`` sleeps
``step_cost_ms`` per step without using the CPU, as a remote simulator or one running on other hardware would. The
dynamics, spaces and returns are CartPole-v0's (:class:`CartPoleEnv`), so a config that solves CartPole solves this.
"""
from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

from ding.config.ranges import at_least, one_of
from ding.envs import BaseEnvTimestep
from ding.utils import ENV_REGISTRY, ConfigError

from .cartpole_env import CartPoleEnv

STEP_COST_KINDS = ("cpu", "wait")


def burn_cpu(seconds: float) -> None:
    """Busy work holding the GIL until this thread has used ``seconds`` of CPU time."""
    end = time.thread_time() + seconds
    x = 0.0
    while time.thread_time() < end:
        for i in range(50):  # a little arithmetic between clock reads, like a simulator's inner loop
            x = x * 0.5 + i


@ENV_REGISTRY.register("cartpole_step_cost")
class StepCostCartPoleEnv(CartPoleEnv):
    """CartPole-v0 with a configurable cost per step (see the module docstring); config keys ``step_cost_ms``
    (milliseconds per step, >= 0) and ``step_cost_kind`` (``'cpu'`` or ``'wait'``)."""

    config = dict(
        CartPoleEnv.config,
        step_cost_ms=2.0,  # milliseconds each step costs (0: plain CartPole)
        step_cost_kind="cpu",  # 'cpu': busy work holding the GIL (a Python simulator); 'wait': sleep (a remote one)
    )
    config_ranges = {"step_cost_ms": at_least(0), "step_cost_kind": one_of(*STEP_COST_KINDS)}

    def __init__(self, env: Any = None, cfg: Mapping | None = None) -> None:
        super().__init__(env, cfg)
        self._step_cost_s, self._step_cost_kind = step_cost_of(self._cfg)

    def step(self, action: Any) -> BaseEnvTimestep:
        if self._step_cost_s > 0:
            if self._step_cost_kind == "cpu":
                burn_cpu(self._step_cost_s)
            else:
                time.sleep(self._step_cost_s)
        return super().step(action)

    def __repr__(self) -> str:
        return f"StepCostCartPoleEnv({self._step_cost_s * 1e3:g} ms {self._step_cost_kind} per step)"


def step_cost_of(cfg: Mapping) -> tuple[float, str]:
    """``(seconds per step, kind)`` from an env config; one ConfigError naming the key for a bad value."""
    kind = cfg.get("step_cost_kind", "cpu")
    if kind not in STEP_COST_KINDS:
        raise ConfigError(f"env.step_cost_kind: {kind!r} is not a step cost kind of 'cartpole_step_cost'; use 'cpu' "
                          "(busy CPU work per step) or 'wait' (a sleep per step, like a remote simulator)")
    ms = cfg.get("step_cost_ms", 0.0)
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not math.isfinite(ms) or ms < 0:
        raise ConfigError(f"env.step_cost_ms: expected a finite number of milliseconds >= 0, got {ms!r}")
    return float(ms) / 1e3, str(kind)
