"""The offline loop: train on a fixed data set, evaluate in the env every ``eval_freq`` iterations; no collecting.

It is a :class:`~ding.engine.serial_loops.TrainLoop` over the same :class:`~ding.engine.serial_run.SerialRun` as the
other serial loops, so the evaluator, checkpoints, Ctrl-C and exact resume are theirs. A round trains until the next
evaluation is due (or a limit), then the skeleton evaluates. Batches follow DI-engine's data loader: each epoch is a
fresh shuffle of the data set, cut into ``batch_size`` batches (the last one smaller); the shuffle of epoch ``e`` is a
function of the run's seed and ``e``, so the loop's position is just ``(epoch, batch)``, saved in every checkpoint.

:func:`prepare_offline` reads the data set named by the config (and, for DI-engine's ``env.norm_obs.offline_stats``,
normalises it and gives the evaluator's envs the same normalisation) before the run is built.
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Any

import numpy as np

from ding.envs import get_vec_env_setting
from ding.policy.common_utils import model_obs_shape
from ding.utils import CheckpointError
from ding.utils.data import OfflineDataset, StreamedHDF5Dataset, create_dataset, learn_takes_columns

from .resume import Limits
from .serial_loops import TrainLoop
from .serial_run import SerialRun
from .training_view import GracefulStop


@dataclass
class OfflineSetup:
    """The data set of an offline run, the env setting its evaluator uses, and the iteration limit of
    ``policy.learn.train_epoch`` passes over the data."""

    dataset: OfflineDataset | StreamedHDF5Dataset
    env_setting: list | None
    epoch_limit: int


def prepare_offline(cfg: Any, env_setting: list | None) -> OfflineSetup:
    """Read the data set, apply DI-engine's offline observation statistics, and compute the epoch limit."""
    dataset = create_dataset(cfg)
    if cfg.policy.collect.get("normalize_obs"):
        mean, std = dataset.mean, dataset.std
        dataset.normalize_obs(mean, std)
        env_fn, collector_cfgs, evaluator_cfgs = get_vec_env_setting(cfg.env) if env_setting is None else env_setting
        env_setting = [partial(NormalizedObsEnv, env_fn, mean, std), collector_cfgs, evaluator_cfgs]
    nstep = int(cfg.policy.get("nstep", 1) or 1)
    if nstep > 1:
        gamma = cfg.policy.get("discount_factor", cfg.policy.learn.get("discount_factor", 0.99))
        dataset.set_nstep(nstep, float(gamma))
    per_epoch = dataset.batches_per_epoch(int(cfg.policy.learn.batch_size))
    epochs = cfg.policy.learn.get("train_epoch")
    limit = int(epochs) * per_epoch if epochs else int(1e10)
    return OfflineSetup(dataset, env_setting, limit)


def translate_offline_keys(main_cfg: dict) -> None:
    """DI-engine's ``env.norm_obs`` with ``offline_stats.use_offline_stats`` (normalise by the data set's statistics)
    becomes ``policy.collect.normalize_obs=True``: the data set is normalised and the evaluator's envs get the same
    normalisation (DI-engine normalises only the data). The env itself then keeps no running statistics."""
    env = main_cfg.get("env") or {}
    norm = env.get("norm_obs") or {}
    if norm.get("use_norm") and (norm.get("offline_stats") or {}).get("use_offline_stats"):
        del env["norm_obs"]
        policy = main_cfg.setdefault("policy", {})
        policy.setdefault("collect", {})["normalize_obs"] = True


class NormalizedObsEnv:
    """An env whose observations are ``(obs - mean) / std`` (the data set's statistics); everything else is the
    wrapped env's."""

    def __init__(self, env_fn: Any, mean: np.ndarray, std: np.ndarray, cfg: Any = None) -> None:
        self._env = env_fn(cfg=cfg)
        self._mean, self._std = np.asarray(mean, np.float32), np.asarray(std, np.float32)

    def _norm(self, obs: Any) -> Any:
        return ((np.asarray(obs, np.float32) - self._mean) / self._std).astype(np.float32)

    def reset(self, *args: Any, **kwargs: Any) -> Any:
        return self._norm(self._env.reset(*args, **kwargs))

    def step(self, action: Any) -> Any:
        timestep = self._env.step(action)
        return timestep._replace(obs=self._norm(timestep.obs))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._env, name)


class OfflineLoop(TrainLoop):
    """Train on the data set up to the next due evaluation; the collect phase is empty."""

    kind = "offline"

    def __init__(self, run: SerialRun, setup: OfflineSetup) -> None:
        super().__init__(run)
        self.dataset = setup.dataset
        self.batch_size = int(run.cfg.policy.learn.batch_size)
        self.eval_freq = int(run.cfg.policy.eval.evaluator.get("eval_freq", 1000))
        self.seed = int(run.cfg.seed)
        self.columns = learn_takes_columns(run.policy)
        self.epoch, self.batch_index = 0, 0

    def start(self, limits: Limits, stop_at_stop_value: bool = True) -> None:
        super().start(limits, stop_at_stop_value)
        model = self.run.policy.learn_mode.get_attribute("model")
        self.dataset.check_fits(model_obs_shape(model), self.run.evaluator_env.action_space,
                                str(self.run.cfg.policy.type))

    def _next_eval_iter(self) -> int:
        last = int(self.run.evaluator.state_dict().get("last_eval_iter", -1))
        return 0 if last < 0 else last + self.eval_freq

    def _next_batch(self) -> Any:
        batch = self.dataset.epoch_batch(self.seed, self.epoch, self.batch_index, self.batch_size, self.columns)
        self.batch_index += 1
        if self.batch_index >= self.dataset.batches_per_epoch(self.batch_size):
            self.epoch, self.batch_index = self.epoch + 1, 0
        return batch

    def train_phase(self, stop: GracefulStop) -> None:
        learner = self.run.learner
        until = min(self._next_eval_iter(), self.limits.train_iter)
        while learner.train_iter < until:
            self._learn(self._next_batch())
            if stop.requested or learner.stop_requested:
                return

    def collect_phase(self, collect_kwargs: dict[str, Any]) -> None:
        pass

    def state_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "epoch": self.epoch, "batch_index": self.batch_index,
                "data_size": len(self.dataset)}

    def load_state_dict(self, state: Mapping[str, Any], path: str) -> None:
        self._check_kind(dict(state), path)
        if int(state["data_size"]) != len(self.dataset):
            raise CheckpointError(f"resume: checkpoint '{path}' was trained on a data set of {state['data_size']} "
                                  f"transitions, {self.dataset.source} holds {len(self.dataset)}; resume with the "
                                  "data set the run started with")
        self.epoch, self.batch_index = int(state["epoch"]), int(state["batch_index"])
