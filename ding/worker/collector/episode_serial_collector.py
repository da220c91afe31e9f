"""EpisodeSerialCollector: collect whole episodes from a vectorised env manager."""
from __future__ import annotations

import time
from typing import Any

from ding.config.ranges import at_least
from ding.utils import SERIAL_COLLECTOR_REGISTRY, ConfigError

from .base_serial_collector import BaseSerialCollector, _policy_attr


@SERIAL_COLLECTOR_REGISTRY.register("episode")
class EpisodeSerialCollector(BaseSerialCollector):
    """Collect ``n_episode`` complete episodes per call (``policy.collect.n_episode`` by default).

    Returns a list of episodes (each a list of transitions), or with ``get_train_sample=True`` the train samples of
    those episodes (``policy.get_train_sample`` of each episode, concatenated). Several envs can finish in the same
    step, so a call returns at least ``n_episode`` episodes (at most ``n_episode + env_num - 1``); unfinished episodes
    continue in the next call. Abnormal episodes are dropped.
    """

    config = dict(
        # Modules to import before the episode callbacks are looked up.
        import_names=[],
        # Deep-copy each observation before keeping it (only for envs that reuse one observation buffer).
        deepcopy_obs=False,
        # Give the policy torch tensors instead of numpy observations.
        transform_obs=False,
        # Log statistics (text log + TensorBoard <instance>_iter/* and _step/*) at most every N train iterations.
        collect_print_freq=100,
        # Return train samples (policy.get_train_sample of each episode) instead of raw episodes.
        get_train_sample=False,
        # Episode callbacks: [dict(type='<EPISODE_CALLBACK_REGISTRY name>', **kwargs), ...].
        callbacks=[],
    )
    config_ranges = {"collect_print_freq": at_least(0, integer=True)}

    def _on_new_policy(self, policy: Any) -> None:
        super()._on_new_policy(policy)
        policy_cfg = _policy_attr(policy, "cfg", None)
        collect_cfg = getattr(policy_cfg, "collect", None) or {}
        self._default_n_episode = collect_cfg.get("n_episode")

    def collect(self, n_episode: int | None = None, train_iter: int = 0, policy_kwargs: dict | None = None) -> list:
        """Step the envs until ``n_episode`` episodes have finished; return them (or their train samples)."""
        self._check_ready("collect")
        if n_episode is None:
            n_episode = self._default_n_episode
            if n_episode is None:
                raise ConfigError(
                    "EpisodeSerialCollector.collect: n_episode is not set; pass collect(n_episode=...) or set "
                    "policy.collect.n_episode"
                )
        policy_kwargs = policy_kwargs or {}
        step = self._core.step
        forward = self._policy.forward
        sent_obs, sent_out = self._core.sent_obs, self._core.sent_out
        process = self._policy.process_transition
        caches, env_steps = self._caches, self._env_steps
        has_cb = bool(self._callbacks)
        to_samples = bool(self._cfg.get_train_sample)
        return_data: list[Any] = []
        episodes = steps = samples_count = 0

        # DI-engine's count: exactly n_episode episodes are started (an env past the quota waits for the next call)
        admitted: set[int] = set()
        to_start = n_episode
        t0 = time.perf_counter()
        while episodes < n_episode:
            for env_id in self._env.ready_obs:
                if env_id not in admitted and to_start > 0:
                    admitted.add(env_id)
                    to_start -= 1
            timesteps = step(forward, policy_kwargs, skip=self._env.ready_obs.keys() - admitted)
            if timesteps is None:
                raise self._idle_error()
            for env_id, timestep in timesteps.items():
                if timestep.info.get("abnormal", False):
                    self._drop_episode(env_id, timestep.info)
                    continue
                transition = process(sent_obs[env_id], sent_out[env_id], timestep)
                transition["collect_iter"] = train_iter
                caches[env_id].append(transition)
                env_steps[env_id] += 1
                steps += 1
                if has_cb:
                    self._callback_step(env_id, timestep, transition)
                if timestep.done:
                    episode = caches[env_id]
                    caches[env_id] = []
                    if to_samples:
                        samples = self._policy.get_train_sample(episode)
                        if has_cb:
                            samples = self._callback_postprocess(env_id, episode, samples)
                        return_data.extend(samples)
                        self._env_samples[env_id] = len(samples)
                        samples_count += len(samples)
                    else:
                        return_data.append(episode)
                        self._env_samples[env_id] = len(episode)
                        samples_count += len(episode)
                    episodes += 1
                    admitted.discard(env_id)
                    self._end_episode(env_id, timestep.info, train_iter)
        duration = time.perf_counter() - t0

        self._record_collect(steps, samples_count, duration, train_iter, log=True)
        if has_cb:
            return_data = self._callback_sample_end(return_data)
        return return_data
