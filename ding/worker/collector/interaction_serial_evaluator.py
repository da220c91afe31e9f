"""InteractionSerialEvaluator: run the eval-mode policy for a fixed set of episodes and track the best mean return."""
from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ding.config.ranges import at_least, one_of
from ding.utils import SERIAL_EVALUATOR_REGISTRY, ConfigError, EnvError
from ding.utils.worker_logs import CONSOLE
from ding.worker.learner.checkpoint import CKPT_BEST_NAME

from .base_serial_evaluator import BaseSerialEvaluator, VectorEvalMonitor, fmt_return
from .step_core import EnvStepCore


@SERIAL_EVALUATOR_REGISTRY.register("interaction")
class InteractionSerialEvaluator(BaseSerialEvaluator):
    """Evaluate by interaction: reset the envs, run exactly ``n_episode`` episodes split over the envs by fixed quotas
    (``VectorEvalMonitor``), report the mean return.

    Seed the evaluator's env manager with ``dynamic_seed=False`` (the pipeline does) and every evaluation plays the same
    episodes. A new best mean return saves ``save_ckpt_fn('ckpt_best.pth.tar')``; reaching ``stop_value`` sets the
    stop flag. Each evaluation prints one line to the console.
    """

    config = dict(
        # Evaluate every N train iterations (and at the first should_eval call).
        eval_freq=1000,
        # Episodes per evaluation, split over the envs by fixed quotas (compile_config copies env.n_evaluator_episode).
        n_episode=5,
        # Mean return that ends training (compile_config copies env.stop_value).
        stop_value=float("inf"),
        render=dict(
            # Record the first episode of each env as a TensorBoard video every N train_iter/envstep; -1: never.
            # Needs an env manager with `ready_imgs` ({env_id: HWC uint8 frame}) and moviepy for tensorboardX.
            render_freq=-1,
            # What render_freq counts: 'train_iter' or 'envstep'.
            mode="train_iter",
        ),
    )
    config_ranges = {
        "eval_freq": at_least(1, integer=True),
        "n_episode": at_least(1, integer=True),
        "render.mode": one_of("train_iter", "envstep"),
    }

    def reset_env(self, _env: Any = None) -> None:
        if _env is not None:
            self._env = _env
            if getattr(_env, "closed", True):
                _env.launch()
        elif self._env is not None:
            self._env.reset()

    def reset(self, _policy: Any = None, _env: Any = None) -> None:
        super().reset(_policy, _env)
        self._last_render_iter = -1
        self._render_warned = False
        if self._cfg.render.mode not in ("train_iter", "envstep"):
            raise ConfigError(f"policy.eval.evaluator.render.mode: {self._cfg.render.mode!r} is not 'train_iter' or "
                              "'envstep'")

    def _should_render(self, envstep: int, train_iter: int) -> bool:
        freq = self._cfg.render.render_freq
        if freq is None or freq < 0:
            return False
        it = envstep if self._cfg.render.mode == "envstep" else train_iter
        if it - self._last_render_iter < freq:
            return False
        self._last_render_iter = it
        return True

    def eval(
            self,
            save_ckpt_fn: Callable[[str], Any] | None = None,
            train_iter: int = -1,
            envstep: int = -1,
            n_episode: int | None = None,
            force_render: bool = False,
            policy_kwargs: dict | None = None,
    ) -> tuple[bool, dict[str, Any]]:
        """Run one evaluation; return ``(stop_flag, episode_info)``.

        ``episode_info`` holds ``eval_episode_return`` (list, env by env), ``episode_length`` (list), the return's
        ``_mean/_std/_max/_min``, ``best_return``, ``envstep_count``, ``duration`` (seconds; ``env_time`` of them in the
        envs' steps; ``policy_time``: CPU seconds of the policy's forward passes), ``train_iter``, ``envstep`` and
        the lists/means of any ``info['episode_info']`` dicts the envs report at episode end.
        """
        self._check_ready("eval")
        n_episode = self._cfg.n_episode if n_episode is None else n_episode
        if n_episode is None or n_episode < 1:
            raise ConfigError(f"InteractionSerialEvaluator.eval: n_episode must be >= 1, got {n_episode!r} "
                              "(set env.n_evaluator_episode or pass eval(n_episode=...))")
        env, policy = self._env, self._policy
        policy_kwargs = policy_kwargs or {}
        env.reset()
        policy.reset()
        monitor = VectorEvalMonitor(env.env_num, n_episode)
        render = force_render or self._should_render(envstep, train_iter)
        if render and not hasattr(env, "ready_imgs"):
            render = False
            if not self._render_warned:
                self._render_warned = True
                self._logger.warning(f"render: {type(env).__name__} has no ready_imgs; no videos are recorded")
        ep_len = [0] * env.env_num
        lengths: dict[int, list[int]] = {i: [] for i in range(env.env_num)}
        # envs that played their quota (some may have none): no more actions for them
        finished = {i for i in range(env.env_num) if monitor.env_finished(i)}
        before_act = (lambda _obs: monitor.update_video(env.ready_imgs)) if render else None
        core = EnvStepCore(env)
        steps = 0

        t0 = time.perf_counter()
        while not monitor.is_finished():
            timesteps = core.step(policy.forward, policy_kwargs, finished, before_act)
            if timesteps is None:
                raise self._idle_error(monitor)
            for env_id, t in timesteps.items():
                steps += 1
                ep_len[env_id] += 1
                if t.info.get("abnormal", False):  # the manager restarted the env; this episode does not count
                    policy.reset([env_id])
                    ep_len[env_id] = 0
                    continue
                if not t.done:
                    continue
                policy.reset([env_id])
                ret = t.info.get("eval_episode_return")
                if ret is None:
                    raise EnvError(f"env {env_id}: the last timestep of an episode has no info['eval_episode_return'];"
                                   " the env must report the episode's return there")
                if not monitor.env_finished(env_id):
                    lengths[env_id].append(ep_len[env_id])
                    if "episode_info" in t.info:
                        monitor.update_info(env_id, t.info["episode_info"])
                    monitor.update_reward(env_id, ret)
                    if monitor.env_finished(env_id):
                        finished.add(env_id)
                ep_len[env_id] = 0
        duration = time.perf_counter() - t0

        returns = np.asarray(monitor.get_episode_return(), dtype=np.float64)
        mean = float(returns.mean())
        if mean > self._best_return:
            if save_ckpt_fn is not None:
                save_ckpt_fn(CKPT_BEST_NAME)
            self._best_return = mean
        stop_value = self._cfg.stop_value
        stop_flag = stop_value is not None and mean >= stop_value
        info: dict[str, Any] = {
            "train_iter": train_iter,
            "envstep": envstep,
            "n_episode": n_episode,
            "eval_episode_return": returns.tolist(),
            "eval_episode_return_mean": mean,
            "eval_episode_return_std": float(returns.std()),
            "eval_episode_return_max": float(returns.max()),
            "eval_episode_return_min": float(returns.min()),
            "episode_length": [n for i in range(env.env_num) for n in lengths[i]],
            "envstep_count": steps,
            "duration": duration,
            "env_time": core.env_time,  # of duration: the envs' steps ...
            "policy_time": core.policy_time,  # ... and the policy's forward passes (the rest: bookkeeping)
            "best_return": self._best_return,
            "stop_flag": stop_flag,
        }
        extra = monitor.get_episode_info()
        if extra:
            info.update({k: v for k, v in extra.items() if k not in info})
        self._log(info, monitor.get_video() if render else None)
        return stop_flag, info

    def _idle_error(self, monitor: VectorEvalMonitor) -> EnvError:
        return EnvError(
            f"evaluator: no env is ready although only {monitor.get_current_episode()} of {sum(monitor.quota)} "
            "episodes are finished; the evaluator's env manager must run enough episodes (env.manager.episode_num)"
        )

    def _log(self, info: dict[str, Any], video: Any) -> None:
        train_iter, envstep = info["train_iter"], info["envstep"]
        rate = info["envstep_count"] / max(info["duration"], 1e-9)
        parts = []  # fields joined by ' | ' after the '[eval]' tag; a field that is unknown is left out
        if train_iter >= 0:
            parts.append(f"iter {train_iter:,}")
        if envstep >= 0:
            parts.append(f"env steps {envstep:,}")
        parts.append(f"return {fmt_return(info['eval_episode_return_mean'])} ± "
                     f"{fmt_return(info['eval_episode_return_std'])} (best {fmt_return(self._best_return)})")
        parts.append(f"{rate:,.0f} steps/s")
        if info["stop_flag"]:
            parts.append(f"reached stop value {fmt_return(self._cfg.stop_value)}")
        self._logger.info("[eval] " + " | ".join(parts), extra=CONSOLE)
        self._logger.info(f"episode returns {info['eval_episode_return']}, lengths {info['episode_length']}")
        tb = self._tb_logger
        if tb is None:
            return
        scalars = {
            "episode_return_mean": info["eval_episode_return_mean"],
            "episode_return_std": info["eval_episode_return_std"],
            "episode_return_max": info["eval_episode_return_max"],
            "episode_return_min": info["eval_episode_return_min"],
            "episode_length_mean": float(np.mean(info["episode_length"])),
            "envstep_per_sec": rate,
        }
        for k, v in scalars.items():
            if train_iter >= 0:
                tb.add_scalar(f"{self._instance_name}_iter/{k}", v, train_iter)
            if envstep >= 0:
                tb.add_scalar(f"{self._instance_name}_step/{k}", v, envstep)
        if video is not None:
            it = envstep if self._cfg.render.mode == "envstep" else train_iter
            tb.add_video(f"{self._instance_name}_{self._cfg.render.mode}/video", video, it)
