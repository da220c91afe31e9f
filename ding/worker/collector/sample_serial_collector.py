"""SampleSerialCollector: collect a number of train samples from a vectorised env manager."""
from __future__ import annotations

import time
from typing import Any

from ding.config.ranges import at_least
from ding.utils import SERIAL_COLLECTOR_REGISTRY, ConfigError

from .base_serial_collector import BaseSerialCollector, _policy_attr, check_n_sample_n_episode, traj_len_of


@SERIAL_COLLECTOR_REGISTRY.register("sample")
class SampleSerialCollector(BaseSerialCollector):
    """Collect ``n_sample`` train samples per call.

    Each env has a trajectory cache. When the episode ends, or the cache holds ``traj_len`` new transitions
    (``traj_len = max(unroll_len, ceil(n_sample / env_num))`` with ``policy.collect.n_sample``), the cache goes
    through ``policy.get_train_sample``. After a chunk that did not end the episode the last ``nstep - 1``
    transitions stay cached (the policy's n-step windows continue into the next chunk). Episodes reported abnormal
    (``info['abnormal']``) are dropped. Every sample gets ``collect_iter`` (the ``train_iter`` it was collected at).

    For an on-policy policy (``policy.on_policy=True``) a call is a rollout instead: every env steps exactly
    ``traj_len`` times and its segments (cut at episode ends and at the end of the call) go through
    ``get_train_sample``, so all data comes from the current policy and no step is wasted (see ``_rollout``).
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
        # Episode callbacks: [dict(type='<EPISODE_CALLBACK_REGISTRY name>', **kwargs), ...].
        callbacks=[],
    )
    config_ranges = {"collect_print_freq": at_least(0, integer=True)}

    def _on_new_policy(self, policy: Any) -> None:
        super()._on_new_policy(policy)
        policy_cfg = _policy_attr(policy, "cfg", None)
        check_n_sample_n_episode(policy_cfg, "sample")
        collect_cfg = getattr(policy_cfg, "collect", None) or {}
        self._default_n_sample = collect_cfg.get("n_sample")
        self._unroll_len = int(collect_cfg.get("unroll_len", 1) or 1)
        self._nstep = int(_policy_attr(policy, "nstep", 1) or 1)
        self._traj_len = traj_len_of(self._default_n_sample, self._env_num, self._unroll_len)
        if self._default_n_sample is not None and self._default_n_sample % self._env_num != 0:
            self._logger.warning(f"n_sample ({self._default_n_sample}) is not a multiple of env_num "
                                 f"({self._env_num}): trajectory chunks are ceil(n_sample / env_num) long")

    @property
    def traj_len(self) -> float:
        """New transitions per trajectory chunk (inf when the policy config has no ``n_sample``)."""
        return self._traj_len

    def collect(
            self,
            n_sample: int | None = None,
            train_iter: int = 0,
            drop_extra: bool = True,
            random_collect: bool = False,
            record_random_collect: bool = True,
            policy_kwargs: dict | None = None,
            level_seeds: dict | list | None = None,
    ) -> list[Any]:
        """Step the envs until ``n_sample`` train samples are ready; return them (exactly ``n_sample`` with
        ``drop_extra``). ``random_collect`` marks a warm-up call (its statistics are logged only with
        ``record_random_collect``); ``level_seeds[env_id]`` is stored as each transition's ``seed``."""
        self._check_ready("collect")
        if n_sample is None:
            n_sample = self._default_n_sample
            if n_sample is None:
                raise ConfigError(
                    "SampleSerialCollector.collect: n_sample is not set; pass collect(n_sample=...) or set "
                    "policy.collect.n_sample"
                )
        policy_kwargs = policy_kwargs or {}
        if self._on_policy:
            return self._rollout(n_sample, train_iter, policy_kwargs, level_seeds)
        step = self._core.step
        forward = self._policy.forward
        sent_obs, sent_out = self._core.sent_obs, self._core.sent_out
        process = self._policy.process_transition
        get_train_sample = self._policy.get_train_sample
        caches, env_steps, env_samples = self._caches, self._env_steps, self._env_samples
        keep = self._nstep - 1
        flush_len = self._traj_len + keep
        has_cb = bool(self._callbacks)  # decided once per call: no callback work on the step path without them
        add_seed = level_seeds is not None
        return_data: list[Any] = []
        collected = steps = 0

        t0 = time.perf_counter()
        while collected < n_sample:
            timesteps = step(forward, policy_kwargs)
            if timesteps is None:
                raise self._idle_error()
            for env_id, timestep in timesteps.items():
                if timestep.info.get("abnormal", False):
                    self._drop_episode(env_id, timestep.info)
                    continue
                transition = process(sent_obs[env_id], sent_out[env_id], timestep)
                transition["collect_iter"] = train_iter
                if add_seed:
                    transition["seed"] = level_seeds[env_id]  # type: ignore[index]  # add_seed: level_seeds is not None
                cache = caches[env_id]
                cache.append(transition)
                env_steps[env_id] += 1
                steps += 1
                if has_cb:
                    self._callback_step(env_id, timestep, transition)
                if timestep.done:
                    samples = get_train_sample(cache)
                    if has_cb:
                        samples = self._callback_postprocess(env_id, cache, samples)
                    return_data.extend(samples)
                    collected += len(samples)
                    env_samples[env_id] += len(samples)
                    cache.clear()
                    self._end_episode(env_id, timestep.info, train_iter)
                elif len(cache) >= flush_len:
                    samples = get_train_sample(cache)
                    if has_cb:
                        samples = self._callback_postprocess(env_id, cache, samples)
                    return_data.extend(samples)
                    collected += len(samples)
                    env_samples[env_id] += len(samples)
                    if keep:
                        del cache[:-keep]
                    else:
                        cache.clear()
        duration = time.perf_counter() - t0

        self._record_collect(steps, collected, duration, train_iter, log=record_random_collect or not random_collect)
        if drop_extra:
            return_data = return_data[:n_sample]
        if has_cb:
            return_data = self._callback_sample_end(return_data)
        return return_data

    def _rollout(self, n_sample: int, train_iter: int, policy_kwargs: dict, level_seeds: dict | list | None) -> list:
        """On-policy collect: every env steps exactly ``traj_len = max(unroll_len, ceil(n_sample / env_num))``
        times with the current policy, and each env's segment (cut at episode ends and at the end of the call) goes
        through ``get_train_sample``. So every sample comes from the current policy, no env step is wasted, and the
        call returns ``env_num * traj_len`` samples (``n_sample`` when it is a multiple of ``env_num``)."""
        quota = traj_len_of(n_sample, self._env_num, self._unroll_len)
        step, forward = self._core.step, self._policy.forward
        sent_obs, sent_out = self._core.sent_obs, self._core.sent_out
        process, get_train_sample = self._policy.process_transition, self._policy.get_train_sample
        caches, env_steps, env_samples = self._caches, self._env_steps, self._env_samples
        has_cb = bool(self._callbacks)
        call_steps = [0] * self._env_num
        full: set[int] = set()  # envs that took their quota of steps in this call
        return_data: list[Any] = []
        steps = 0

        t0 = time.perf_counter()
        while len(full) < self._env_num:
            timesteps = step(forward, policy_kwargs, full)
            if timesteps is None:
                raise self._idle_error()
            for env_id, timestep in timesteps.items():
                if timestep.info.get("abnormal", False):
                    self._drop_episode(env_id, timestep.info)
                    continue
                transition = process(sent_obs[env_id], sent_out[env_id], timestep)
                transition["collect_iter"] = train_iter
                if level_seeds is not None:
                    transition["seed"] = level_seeds[env_id]
                cache = caches[env_id]
                cache.append(transition)
                env_steps[env_id] += 1
                call_steps[env_id] += 1
                steps += 1
                if has_cb:
                    self._callback_step(env_id, timestep, transition)
                if call_steps[env_id] >= quota:
                    full.add(env_id)
                if timestep.done or env_id in full:
                    samples = get_train_sample(cache)
                    if has_cb:
                        samples = self._callback_postprocess(env_id, cache, samples)
                    return_data.extend(samples)
                    env_samples[env_id] += len(samples)
                    cache.clear()
                    if timestep.done:
                        self._end_episode(env_id, timestep.info, train_iter)
        duration = time.perf_counter() - t0

        self._record_collect(steps, len(return_data), duration, train_iter, log=True)
        if has_cb:
            return_data = self._callback_sample_end(return_data)
        return return_data
