"""CartPole whose every step costs 2 ms of one of three kinds: the env of parallel mode's held-out benchmark.

``slow_kind`` says what the step spends its ``slow_ms`` on:

* ``'gil'``: pure-Python arithmetic that holds the GIL, as a simulator written in Python does;
* ``'native'``: numpy ufunc loops over a large array, which release the GIL while they run (single-threaded native
  work, as a physics engine's step is);
* ``'wait'``: ``time.sleep``, no CPU at all, as a remote simulator or one on other hardware.

The two CPU kinds count the thread's own CPU time (``time.thread_time``), so on a loaded machine a step still does
that much work and takes longer on the wall clock. Dynamics, spaces and returns are CartPole-v0's, so a config that
solves CartPole solves this. Configs name it with ``create_config.env.type = 'cartpole_slow_bench'`` and
``import_names = ['tests.benchmark.slow_cartpole']`` (the repository root on ``PYTHONPATH``).
"""
from __future__ import annotations

import math
import time
from collections.abc import Mapping
from typing import Any

import numpy as np

from ding.config.ranges import at_least, one_of
from ding.envs import BaseEnvTimestep
from ding.utils import ENV_REGISTRY, ConfigError
from dizoo.classic_control.cartpole.envs.cartpole_env import CartPoleEnv

SLOW_KINDS = ("gil", "native", "wait")


def python_work(seconds: float) -> None:
    """Arithmetic in the interpreter, holding the GIL, until this thread has used ``seconds`` of CPU time."""
    end = time.thread_time() + seconds
    x = 0.0
    while time.thread_time() < end:
        for i in range(50):
            x = x * 0.5 + i


class NativeWork:
    """numpy work that releases the GIL: ufunc loops over 16k floats (~30-60 us each) until this thread has used the
    given CPU time; the GIL is taken back only between loops, to read the clock."""

    def __init__(self) -> None:
        self._a = np.linspace(0.0, 1.0, 16384)
        self._b = np.empty_like(self._a)

    def __call__(self, seconds: float) -> None:
        end = time.thread_time() + seconds
        while time.thread_time() < end:
            np.sin(self._a, out=self._b)
            np.multiply(self._b, 0.5, out=self._a)


@ENV_REGISTRY.register("cartpole_slow_bench")
class SlowCartPoleEnv(CartPoleEnv):
    """CartPole-v0 with ``slow_ms`` milliseconds of ``slow_kind`` work per step (see the module docstring)."""

    config = dict(CartPoleEnv.config, slow_ms=2.0, slow_kind="gil")
    config_ranges = {"slow_ms": at_least(0), "slow_kind": one_of(*SLOW_KINDS)}

    def __init__(self, env: Any = None, cfg: Mapping | None = None) -> None:
        super().__init__(env, cfg)
        kind = self._cfg.get("slow_kind", "gil")
        if kind not in SLOW_KINDS:
            raise ConfigError(f"env.slow_kind: {kind!r} is not a kind of 'cartpole_slow_bench'; use one of "
                              f"{', '.join(SLOW_KINDS)}")
        ms = self._cfg.get("slow_ms", 2.0)
        if isinstance(ms, bool) or not isinstance(ms, (int, float)) or not math.isfinite(ms) or ms < 0:
            raise ConfigError(f"env.slow_ms: expected a finite number of milliseconds >= 0, got {ms!r}")
        self._cost_s, self._kind = float(ms) / 1e3, str(kind)
        self._work = {"gil": python_work, "native": NativeWork(), "wait": time.sleep}[self._kind]

    def step(self, action: Any) -> BaseEnvTimestep:
        if self._cost_s > 0:
            self._work(self._cost_s)
        return super().step(action)

    def __repr__(self) -> str:
        return f"SlowCartPoleEnv({self._cost_s * 1e3:g} ms {self._kind} per step)"
