"""The env-stepping block every serial collector and evaluator runs: observe the ready envs, act, step them."""
from __future__ import annotations

import copy
import time
from collections.abc import Callable, Container, Mapping
from typing import Any

from ding.torch_utils import to_tensor


class EnvStepCore:
    """One vector step of an env manager driven by a policy's batched ``forward``.

    :meth:`step` takes the observations of the envs waiting for an action (minus ``skip``), asks ``forward`` for all
    their actions in one call, steps those envs and returns ``{env_id: timestep}``. What each env was last sent stays
    in ``sent_obs`` / ``sent_out``: an async manager may answer an action in a later call, so a transition pairs its
    timestep with what was sent to that env, never with the latest ``ready_obs``. When no env waits for an action, the
    answers of envs still stepping are awaited (async managers); with nothing in flight either, ``step`` returns None
    and the caller raises its own error (it knows why nothing is left).
    """

    __slots__ = ("env", "deepcopy_obs", "transform_obs", "sent_obs", "sent_out", "env_time", "policy_time")

    def __init__(self, env: Any, deepcopy_obs: bool = False, transform_obs: bool = False) -> None:
        self.env = env
        self.deepcopy_obs = deepcopy_obs  # for envs that reuse one observation buffer
        self.transform_obs = transform_obs  # give the policy torch tensors instead of numpy arrays
        self.sent_obs: dict[int, Any] = {}
        self.sent_out: dict[int, Any] = {}
        self.env_time = 0.0  # seconds spent in the env manager's step (the envs' own cost)
        # CPU seconds of this thread in the policy's forward: what every shard of a split evaluation repeats. Not
        # wall time, which on a busy machine also counts the time the process waited for a core, so a cheap forward
        # would look as costly as the envs and the evaluation would be judged not worth splitting
        self.policy_time = 0.0

    def step(
            self,
            forward: Callable[..., Mapping[int, Mapping[str, Any]]],
            policy_kwargs: Mapping[str, Any],
            skip: Container[int] | None = None,
            before_act: Callable[[Mapping[int, Any]], None] | None = None,
    ) -> Mapping[int, Any] | None:
        """Act in every ready env not in ``skip`` and step them; ``before_act(obs)`` runs first (e.g. recording
        frames). Returns the timesteps that arrived (possibly of envs sent an action earlier), or None if no env is
        ready or in flight."""
        env = self.env
        obs = env.ready_obs
        if skip:
            obs = {i: o for i, o in obs.items() if i not in skip}
        if not obs:
            return self._step_env({}) if in_flight(env) else None
        if self.deepcopy_obs:
            obs = copy.deepcopy(obs)
        if before_act is not None:
            before_act(obs)
        t0 = time.thread_time()
        output = forward(to_tensor(obs) if self.transform_obs else obs, **policy_kwargs)
        self.policy_time += time.thread_time() - t0
        self.sent_obs.update(obs)
        self.sent_out.update(output)
        return self._step_env({env_id: out["action"] for env_id, out in output.items()})

    def _step_env(self, actions: Mapping[int, Any]) -> Mapping[int, Any]:
        t0 = time.perf_counter()
        try:
            return self.env.step(actions)
        finally:
            self.env_time += time.perf_counter() - t0


def in_flight(env: Any) -> bool:
    """Whether some env of ``env`` is stepping or resetting without being ready yet (an async manager's answer is
    still to come, and ``env.step({})`` waits for it)."""
    from ding.envs.env_manager.manager_utils import EnvState

    ready = env.ready_obs
    return any(state in (EnvState.RUN, EnvState.RESET) and i not in ready
               for i, state in enumerate(getattr(env, "env_states", ())))
