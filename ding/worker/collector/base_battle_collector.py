"""What the two battle collectors share on top of ``BaseSerialCollector``: a list of policies, per-player caches."""
from __future__ import annotations

import copy
from typing import Any

from .base_serial_collector import BaseSerialCollector, _policy_attr
from .battle_core import BattleCache, PolicyGroup, is_abnormal, player_returns, record_step


class BaseBattleCollector(BaseSerialCollector):
    """A serial collector whose policy is a list, one policy per player (``policy[i]`` plays player ``i``).

    Logs, the console line, statistics, ``envstep`` and ``state_dict`` are ``BaseSerialCollector``'s; the episode
    return it logs is the first player's, with every player's mean beside it. A policy object with
    ``collect_data = False`` only acts: its transitions are not kept (DI-engine's attribute); so does a policy without
    ``process_transition`` (e.g. a scripted opponent).
    """

    def reset_policy(self, _policy: Any = None) -> None:
        if _policy is not None and not isinstance(_policy, PolicyGroup):
            _policy = PolicyGroup(_policy, f"{type(self).__name__}.reset_policy")
        super().reset_policy(_policy)
        if _policy is not None:
            self._reset_episodes()  # the caches have one slot per player

    def _on_new_policy(self, policy: Any) -> None:
        super()._on_new_policy(policy)
        self._collect_data = [bool(getattr(p, "collect_data", True))
                              and callable(getattr(p, "process_transition", None)) for p in policy.policies]
        self._policy_cfg = _policy_attr(policy, "cfg", None)

    @property
    def _players(self) -> int:
        return len(self._policy) if self._policy is not None else 0

    def _new_cache(self) -> BattleCache:
        return BattleCache.empty(self._players)

    def _cache_state(self, cache: BattleCache) -> BattleCache:
        return copy.deepcopy(cache)

    def _load_cache(self, state: BattleCache) -> BattleCache:
        return copy.deepcopy(state)

    def _step_envs(self, policy_kwargs: dict, train_iter: int, on_step: Any) -> int:
        """One vector step: record each env's step into its cache, call ``on_step(env_id, timestep)`` for the normal
        ones; return the number of env steps taken."""
        timesteps = self._core.step(self._policy.forward, policy_kwargs)
        if timesteps is None:
            raise self._idle_error()
        sent_obs, sent_out = self._core.sent_obs, self._core.sent_out
        steps = 0
        for env_id, timestep in timesteps.items():
            if is_abnormal(timestep.info):
                self._drop_episode(env_id, timestep.info)
                continue
            record_step(self._caches[env_id], self._policy, sent_obs[env_id], sent_out[env_id], timestep, train_iter,
                        self._collect_data)
            self._env_steps[env_id] += 1
            steps += 1
            on_step(env_id, timestep)
        return steps

    def _finish_episode(self, env_id: int, timestep: Any, train_iter: int, return_info: list[list]) -> None:
        """The episode of ``env_id`` ended: keep each player's last info, log it, reset the env's cache."""
        for i in range(self._players):
            return_info[i].append(timestep.info[i])
        self._caches[env_id] = self._new_cache()
        self._end_episode(env_id, timestep.info[0], train_iter, player_returns(timestep.info, self._players))
