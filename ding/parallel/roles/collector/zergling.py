"""ZerglingParallelCollector: one policy, many envs; serial mode's sample collector and evaluator, driven by tasks
(envs and partial trajectories live on between tasks)."""
from __future__ import annotations

import dataclasses
import math
import os
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from ding.parallel.files import check_policy_fits
from ding.parallel.protocol import CollectorFinishInfo, CollectResult, CollectTask, EvalResult, EvalTask, SampleMeta
from ding.parallel.roles.collector.base_parallel import BaseParallelCollector
from ding.utils import PARALLEL_COLLECTOR_REGISTRY, close_all, deep_merge_dicts, join_run_dir, torch_save_atomic
from ding.utils.torch_threads import torch_threads_in_this_thread
from ding.worker.collector.episode_callback import EpisodeCallback
from ding.worker.learner.checkpoint import COLLECTOR_CKPT_DIR


def compress_enabled(compressor: object) -> bool:
    """Whether data files are compressed: any compressor name but 'none' (DI-engine's 'lz4' becomes zlib)."""
    return str(compressor).lower() not in ("none", "", "false")


class _EpisodeRecorder(EpisodeCallback):
    """Keeps the return and length of each episode finished since the last ``take()``."""

    def __init__(self) -> None:
        self.episodes: list[tuple[float, int]] = []

    def on_episode_end(self, env_id: int, episode_info: dict) -> dict | None:
        if episode_info.get("eval_episode_return") is not None:
            self.episodes.append((float(episode_info["eval_episode_return"]), int(episode_info["step"])))
        return None

    def take(self) -> tuple[list[float], list[int]]:
        episodes, self.episodes = self.episodes, []
        return [ret for ret, _ in episodes], [length for _, length in episodes]


@PARALLEL_COLLECTOR_REGISTRY.register("zergling")
class ZerglingParallelCollector(BaseParallelCollector):
    """``cfg`` is the compiled main config (``policy.collect.collector`` is this collector's own config)."""

    config = dict(
        type="zergling",
        import_names=[],
        update_policy_second=3.0,  # seconds: check the learner's policy file at most this often (collect tasks)
        compressor="zlib",  # data file compression: 'zlib' or 'none' (DI-engine's 'lz4' is read as 'zlib')
        print_freq=5,  # accepted for DI-engine configs; statistics go to the collector's log every task
        serial_collector=dict(type="sample"),  # the serial collector that steps the envs (and its config)
    )

    def __init__(self, cfg: Any, exp_name: str | None = None, instance_name: str = "collector0", seed: int = 0,
                 policy_path: str = "", *, send_stepdata: Callable[..., Any],
                 get_policy_update_info: Callable[[str], dict | None],
                 send_samples: Callable[..., list[str]] | None = None) -> None:
        super().__init__(cfg, exp_name or cfg.exp_name, instance_name, send_stepdata=send_stepdata,
                         get_policy_update_info=get_policy_update_info, send_samples=send_samples)
        join_run_dir(self._exp_name)  # a role of the parallel run that the coordinator's process holds
        self._own_cfg = deep_merge_dicts(self.default_config(), cfg.policy.collect.collector)
        self._seed = int(seed)
        self._policy_path = policy_path
        self.compress = compress_enabled(self._own_cfg.compressor)
        self._policy: Any = None
        self._collector: Any = None
        self._evaluator: Any = None
        self._closables: list[Any] = []
        self._recorder = _EpisodeRecorder()
        self._last_check = -math.inf
        self._policy_stat: tuple[int, int] | None = None
        self._totals = CollectorFinishInfo()

    def start(self) -> None:
        self._build()
        self._collector.register_callback(self._recorder)

    def _build(self, **kwargs: Any) -> None:
        from ding.worker.builder import build_acting  # lazy: it imports this package

        acting = build_acting(self._cfg, seed=self._seed, dynamic_seed=True,
                              collector_cfg=dict(self._own_cfg.serial_collector), exp_name=self._exp_name,
                              instance_name=self._instance_name, **kwargs)
        self._closables += acting.closables
        self._policy, self._collector, self._evaluator = acting.policy, acting.collector, acting.evaluator

    def _load_policy(self, path: str, *modes: Any) -> dict | None:
        """Load the policy file ``path`` into ``modes`` once it fits the first; its state (None: nothing there)."""
        state = self.get_policy_update_info(path)
        if state is not None:
            check_policy_fits(state, modes[0].state_dict()["model"], path)
            for mode in modes:
                mode.load_state_dict({"model": state["model"]})
        return state

    def _update_policy(self, force: bool = False) -> None:
        """Load the policy file if it changed (checked at most every ``update_policy_second`` unless ``force``)."""
        now = time.monotonic()
        if not force and now - self._last_check < float(self._own_cfg.update_policy_second):
            return
        self._last_check = now
        try:
            st = os.stat(self._policy_path)
        except FileNotFoundError:
            return
        stamp = (st.st_mtime_ns, st.st_size)
        if stamp == self._policy_stat:
            return
        state = self._load_policy(self._policy_path, self._policy.collect_mode, self._policy.eval_mode)
        if state is not None:
            self._policy_stat = stamp
            self._policy_iter = int(state["iter"])

    def run_task(self, task: CollectTask | EvalTask) -> CollectResult | EvalResult:
        torch_threads_in_this_thread()  # tasks run in the slave's worker threads
        if isinstance(task, EvalTask):
            return self._evaluate(task)
        return self._collect(task)

    def _collect(self, task: CollectTask) -> CollectResult:
        """Play the task, write its samples to the data file ``<task_id>_0``, count them in the totals; the answer."""
        self._update_policy(force=self._policy_iter < 0)
        t0 = time.perf_counter()
        envstep0 = self._collector.envstep
        samples, episodes, fields = self._play(task)
        ids = self.send_samples(f"{task.task_id}_0", samples, self.compress)
        collect_iter = max(self._policy_iter, 0)
        metadata = []
        for data_id, sample in zip(ids, samples):
            priority = sample.get("priority")
            metadata.append(SampleMeta(data_id=data_id, collect_iter=collect_iter,
                                       priority=None if priority is None
                                       else float(np.asarray(priority).reshape(-1)[0])))
        steps = self._collector.envstep - envstep0
        self._totals.envstep += steps
        self._totals.sample_count += len(metadata)
        self._totals.episode_count += episodes
        self._totals.tasks += 1
        return CollectResult(metadata=metadata, envstep=steps, sample_count=len(metadata),
                             policy_iter=self._policy_iter, duration=time.perf_counter() - t0, **fields)

    def _play(self, task: CollectTask) -> tuple[list[dict[str, Any]], int, dict[str, Any]]:
        """Step the envs until ``task.n_sample`` samples exist: them, the episodes finished, the answer's own fields."""
        samples = self._collector.collect(n_sample=task.n_sample, train_iter=max(self._policy_iter, 0),
                                          policy_kwargs=dict(task.collect_setting))
        returns, lengths = self._recorder.take()
        return samples, len(returns), dict(episode_returns=returns, episode_lengths=lengths)

    def _load_eval_policy(self, task: EvalTask) -> int:
        """Load the newest published policy (the one an evaluation names) into the eval mode; its train iteration."""
        if task.policy_id != os.path.basename(self._policy_path):
            raise ValueError(f"evaluation task {task.task_id}: policy_id {task.policy_id!r} is not this run's policy "
                             f"{os.path.basename(self._policy_path)!r}")
        self._update_policy(force=True)
        return self._policy_iter

    def _evaluate(self, task: EvalTask) -> EvalResult:
        policy_iter = self._load_eval_policy(task)
        info = self._run_evaluator(task, policy_iter, policy_kwargs=dict(task.eval_setting))
        return EvalResult.from_evaluator(info, policy_iter)

    def _run_evaluator(self, task: EvalTask, policy_iter: int, **kwargs: Any) -> Any:
        """Evaluate the loaded policy for the configured episodes; the evaluator's info."""
        self._evaluator.best_return = -math.inf if task.best_return is None else task.best_return
        _, info = self._evaluator.eval(self._save_best, train_iter=max(policy_iter, 0), envstep=task.envstep, **kwargs)
        self._totals.eval_tasks += 1
        return info

    def _save_best(self, ckpt_name: str) -> None:
        """A new best evaluation: keep this policy as ``<exp>/collector_ckpt/ckpt_best.pth.tar`` (tensors only,
        atomic). Not in ``<exp>/ckpt/``: that directory is the learner's alone (docs/parallel.md, Security)."""
        state = dict(self._policy.eval_mode.state_dict())
        state["last_iter"] = max(self._policy_iter, 0)
        torch_save_atomic(state, os.path.join(self._exp_name, COLLECTOR_CKPT_DIR, ckpt_name))

    def get_finish_info(self) -> CollectorFinishInfo:
        return dataclasses.replace(self._totals, policy_iter=self._policy_iter)

    def close(self) -> None:
        closables, self._closables = self._closables[::-1], []
        close_all(closables)
