"""BattleSampleSerialCollector: a number of train samples per policy from several policies playing each other."""
from __future__ import annotations

import time
from typing import Any

from ding.config.ranges import at_least
from ding.utils import SERIAL_COLLECTOR_REGISTRY, ConfigError

from .base_battle_collector import BaseBattleCollector
from .base_serial_collector import _policy_attr, traj_len_of


@SERIAL_COLLECTOR_REGISTRY.register("sample_1v1")
class BattleSampleSerialCollector(BaseBattleCollector):
    """Collect until every collecting policy has ``n_sample`` train samples (``policy[0]``'s ``collect.n_sample`` by
    default); ``policy[i]`` plays player ``i`` (n players, n policies).

    Each player's trajectory in each env goes through its policy's ``get_train_sample`` when the episode ends or when
    it holds ``traj_len = max(unroll_len, ceil(n_sample / env_num))`` new transitions (the last ``nstep - 1`` stay for
    the next chunk, as in ``SampleSerialCollector``). ``collect`` returns ``(data, info)``, one list per policy:
    ``data[i]`` is player ``i``'s samples (exactly ``n_sample`` with ``drop_extra``; empty for a policy with
    ``collect_data = False``), ``info[i]`` the info dicts of its episodes' last timesteps.
    """

    config = dict(
        # Deep-copy each observation before keeping it (only for envs that reuse one observation buffer).
        deepcopy_obs=False,
        # Give the policies torch tensors instead of numpy observations.
        transform_obs=False,
        # Log statistics (text log + TensorBoard <instance>_iter/* and _step/*) at most every N train iterations.
        collect_print_freq=100,
    )
    config_ranges = {"collect_print_freq": at_least(0, integer=True)}

    def _on_new_policy(self, policy: Any) -> None:
        super()._on_new_policy(policy)
        collect_cfg = getattr(self._policy_cfg, "collect", None) or {}
        self._default_n_sample = collect_cfg.get("n_sample")
        self._unroll_len = int(collect_cfg.get("unroll_len", 1) or 1)
        self._nsteps = [int(_policy_attr(p, "nstep", 1) or 1) for p in policy.policies]
        self._traj_len = traj_len_of(self._default_n_sample, self._env_num, self._unroll_len)

    def collect(self, n_sample: int | None = None, train_iter: int = 0, drop_extra: bool = True,
                policy_kwargs: dict | None = None) -> tuple[list[list[Any]], list[list[Any]]]:
        """Step the envs until each collecting policy has ``n_sample`` samples; return ``(data, info)``."""
        self._check_ready("collect")
        if n_sample is None:
            n_sample = self._default_n_sample
            if n_sample is None:
                raise ConfigError("BattleSampleSerialCollector.collect: n_sample is not set; pass "
                                  "collect(n_sample=...) or set policy.collect.n_sample")
        if not any(self._collect_data):
            raise ValueError("BattleSampleSerialCollector.collect: every policy has collect_data=False, so no sample "
                             "can be collected")
        players = self._players
        traj_len = self._traj_len if n_sample == self._default_n_sample else \
            traj_len_of(n_sample, self._env_num, self._unroll_len)
        return_data: list[list[Any]] = [[] for _ in range(players)]
        return_info: list[list[Any]] = [[] for _ in range(players)]
        collected = [0] * players

        def flush(env_id: int, player: int, done: bool) -> None:
            transitions = self._caches[env_id].transitions[player]
            if not transitions:
                return
            samples = self._policy.policies[player].get_train_sample(transitions)
            return_data[player].extend(samples)
            collected[player] += len(samples)
            self._env_samples[env_id] += len(samples)
            keep = self._nsteps[player] - 1
            if done or not keep:
                transitions.clear()
            else:
                del transitions[:-keep]

        def on_step(env_id: int, timestep: Any) -> None:
            cache = self._caches[env_id]
            for i in range(players):
                if not self._collect_data[i]:
                    continue
                if timestep.done or len(cache.transitions[i]) >= traj_len + self._nsteps[i] - 1:
                    flush(env_id, i, bool(timestep.done))
            if timestep.done:
                self._finish_episode(env_id, timestep, train_iter, return_info)

        steps = 0
        t0 = time.perf_counter()
        while any(c < n_sample for c, keep in zip(collected, self._collect_data) if keep):
            steps += self._step_envs(policy_kwargs or {}, train_iter, on_step)
        self._record_collect(steps, sum(collected), time.perf_counter() - t0, train_iter, log=True)
        if drop_extra:
            return_data = [d[:n_sample] for d in return_data]
        return return_data, return_info
