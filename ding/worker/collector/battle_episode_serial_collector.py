"""BattleEpisodeSerialCollector: whole episodes of several policies playing each other."""
from __future__ import annotations

import time
from typing import Any

from ding.config.ranges import at_least
from ding.utils import SERIAL_COLLECTOR_REGISTRY, ConfigError

from .base_battle_collector import BaseBattleCollector


@SERIAL_COLLECTOR_REGISTRY.register("episode_1v1")
class BattleEpisodeSerialCollector(BaseBattleCollector):
    """Collect ``n_episode`` complete episodes per call (``policy[0]``'s ``collect.n_episode`` by default), with
    ``policy[i]`` playing player ``i``.

    ``collect`` returns ``(data, info)``, each a list with one entry per policy: ``data[i]`` is player ``i``'s train
    samples (``get_train_sample=True``: ``policy[i].get_train_sample`` of each episode, concatenated) or its episodes
    (lists of transitions), and ``info[i]`` the info dicts of player ``i``'s last timesteps (e.g. ``'result'``).
    Several envs can finish in the same step, so a call may return up to ``n_episode + env_num - 1`` episodes;
    unfinished episodes continue in the next call. Abnormal episodes are dropped.
    """

    config = dict(
        # Deep-copy each observation before keeping it (only for envs that reuse one observation buffer).
        deepcopy_obs=False,
        # Give the policies torch tensors instead of numpy observations.
        transform_obs=False,
        # Log statistics (text log + TensorBoard <instance>_iter/* and _step/*) at most every N train iterations.
        collect_print_freq=100,
        # Return train samples (policy.get_train_sample of each episode) instead of raw episodes.
        get_train_sample=False,
    )
    config_ranges = {"collect_print_freq": at_least(0, integer=True)}

    def _on_new_policy(self, policy: Any) -> None:
        super()._on_new_policy(policy)
        collect_cfg = getattr(self._policy_cfg, "collect", None) or {}
        self._default_n_episode = collect_cfg.get("n_episode")

    def collect(self, n_episode: int | None = None, train_iter: int = 0,
                policy_kwargs: dict | None = None) -> tuple[list[list[Any]], list[list[Any]]]:
        """Step the envs until ``n_episode`` episodes have finished; return ``(data, info)``, one list per policy."""
        self._check_ready("collect")
        if n_episode is None:
            n_episode = self._default_n_episode
            if n_episode is None:
                raise ConfigError("BattleEpisodeSerialCollector.collect: n_episode is not set; pass "
                                  "collect(n_episode=...) or set policy.collect.n_episode")
        players = self._players
        to_samples = bool(self._cfg.get_train_sample)
        return_data: list[list[Any]] = [[] for _ in range(players)]
        return_info: list[list[Any]] = [[] for _ in range(players)]
        counts = {"episodes": 0, "samples": 0}

        def on_step(env_id: int, timestep: Any) -> None:
            if not timestep.done:
                return
            cache, n = self._caches[env_id], 0
            for i, policy in enumerate(self._policy.policies):
                if not self._collect_data[i] or not cache.transitions[i]:
                    continue
                episode = cache.transitions[i]
                if to_samples:
                    samples = policy.get_train_sample(episode)
                    return_data[i].extend(samples)
                    n += len(samples)
                else:
                    return_data[i].append(episode)
                    n += len(episode)
            self._env_samples[env_id] = n
            counts["samples"] += n
            counts["episodes"] += 1
            self._finish_episode(env_id, timestep, train_iter, return_info)

        steps = 0
        t0 = time.perf_counter()
        while counts["episodes"] < n_episode:
            steps += self._step_envs(policy_kwargs or {}, train_iter, on_step)
        self._record_collect(steps, counts["samples"], time.perf_counter() - t0, train_iter, log=True)
        return return_data, return_info
