"""``serial_pipeline_offline`` (train on a data set, no collecting) and ``collect_demo_data`` (write one with a
trained policy), DI-engine's doors of the offline workflow; see docs/offline.md."""
from __future__ import annotations

import os
from typing import Any

import numpy as np
import torch

from ding.config import claim_run_dir, compile_config
from ding.engine.offline_loop import translate_offline_keys
from ding.engine.serial_checks import load_input
from ding.engine.training_view import GracefulStop
from ding.policy import get_random_policy
from ding.utils import CheckpointError, DatasetError, setup_torch_threads
from ding.utils.data import save_hdf5, save_minari, transitions_to_arrays
from ding.worker import load_checkpoint_file
from ding.worker.builder import build_acting

from .trainer import Trainer


def serial_pipeline_offline(
    input_cfg: str | tuple[dict, dict],
    seed: int = 0,
    env_setting: list | None = None,
    model: torch.nn.Module | None = None,
    max_train_iter: int | None = int(1e10),
    *,
    resume: bool | None = None,
    extend: bool = False,
    source: str | None = None,
) -> tuple[Any, bool]:
    """Train on the data set of ``policy.collect.data_path`` (type ``policy.collect.data_type``), evaluating in the env
    every ``eval_freq`` iterations, until the stop value, ``max_train_iter`` or ``learn.train_epoch`` passes over the
    data; return ``(policy, stop)`` as DI-engine does (``stop``: the stop value was reached). ``resume=True``
    continues the run in ``./<exp_name>/`` from its latest checkpoint, exactly."""
    main_cfg, create_cfg, source = load_input(input_cfg, source, where="serial_pipeline_offline")
    translate_offline_keys(main_cfg)
    with GracefulStop() as stop:
        with Trainer((main_cfg, create_cfg), seed, env_setting=env_setting, model=model, max_train_iter=max_train_iter,
                     resume=resume, extend=extend, on_policy=False, offline=True, source=source,
                     _stop=stop) as trainer:
            last = trainer.run() or {}
    return trainer.policy, last.get("stop_reason") == "stop_value"


def collect_demo_data(
    input_cfg: str | tuple[dict, dict],
    seed: int,
    collect_count: int,
    expert_data_path: str | None = None,
    env_setting: list | None = None,
    model: torch.nn.Module | None = None,
    state_dict: dict | None = None,
    state_dict_path: str | None = None,
    *,
    data_type: str | None = None,
    random_policy: bool = False,
    overwrite: bool = False,
    attrs: dict | None = None,
) -> str:
    """Collect ``collect_count`` transitions with the policy of ``state_dict`` (or the ding checkpoint
    ``state_dict_path``; ``random_policy=True``: uniformly random actions) and write them as a data set; return
    where it went.

    The path is ``expert_data_path`` or ``policy.collect.save_path``; the format ``data_type`` or
    ``policy.collect.data_type`` (``'hdf5'`` DI-engine's layout, ``'d4rl'``, ``'minari'``: the path is the dataset
    id). A DI-engine ``.pkl`` save path becomes ``<path>_demos.hdf5``, where DI-engine writes it. The policy acts in
    collect mode (epsilon 0 for policies with an epsilon schedule). The file records ``behaviour_return`` (mean return
    of the complete episodes collected), its std and episode count, and ``attrs``; an existing file is refused
    unless ``overwrite``.
    """
    setup_torch_threads()
    if int(collect_count) < 1:
        raise DatasetError(f"collect_demo_data: collect_count must be >= 1, got {collect_count}")
    main_cfg, create_cfg, src = load_input(input_cfg, None, where="collect_demo_data")
    cfg = compile_config(main_cfg, seed=seed, auto=True, create_cfg=create_cfg, save_cfg=False, source=src)
    if "nstep" in cfg.policy:  # a data set holds one-step transitions; the offline loop makes n-step samples
        cfg.policy.nstep = 1
    data_type = data_type or cfg.policy.collect.get("data_type") or "hdf5"
    if data_type == "naive":
        raise DatasetError("collect_demo_data: data_type 'naive' (pickle) is not written by ding; use 'hdf5'")
    path = expert_data_path or cfg.policy.collect.get("save_path")
    if not path:
        raise DatasetError("collect_demo_data: no output path; pass expert_data_path or set policy.collect.save_path")
    path = demo_data_path(str(path), data_type)
    if data_type != "minari" and os.path.exists(path) and not overwrite:
        raise DatasetError(f"{path}: a data set is already there; give another path, remove it, or pass "
                           "overwrite=True")
    if state_dict is None and not random_policy:
        if state_dict_path is None:
            raise CheckpointError("collect_demo_data: give the behaviour policy: state_dict, state_dict_path (a ding "
                                  "checkpoint such as <run>/ckpt/ckpt_best.pth.tar) or random_policy=True")
        state_dict = load_checkpoint_file(state_dict_path)
    # the collector's logs go to a directory of its own, so the offline run can take exp_name itself
    run_dir = claim_run_dir(f"{cfg.exp_name}_demo_data")
    cfg.exp_name = run_dir.path
    try:
        side = build_acting(cfg, seed=seed, env_setting=env_setting, model=model, policy_fields=("collect", "eval"))
    except BaseException:
        run_dir.release()
        raise
    try:
        collector = side.collector
        if random_policy:
            collector.reset_policy(get_random_policy(side.policy.collect_mode, side.collector_env.action_space))
        else:
            side.policy.collect_mode.load_state_dict(state_dict)
            collector.reset_policy(side.policy.collect_mode)
        kwargs = {"eps": 0.0} if "eps" in cfg.policy.other else None
        data = collector.collect(n_sample=int(collect_count), policy_kwargs=kwargs)
        returns = [e["eval_episode_return"] for e in collector.pop_finished_episodes()
                   if e["eval_episode_return"] is not None]
        obs_space, act_space = side.collector_env.observation_space, side.collector_env.action_space
    finally:
        side.close()
        run_dir.release()
    arrays = transitions_to_arrays(data)
    meta = {"behaviour_return": float(np.mean(returns)) if returns else float("nan"),
            "behaviour_return_std": float(np.std(returns)) if returns else float("nan"),
            "behaviour_episodes": len(returns), "env": str(cfg.env.get("type")),
            "policy": "random" if random_policy else str(cfg.policy.type), "seed": int(seed), **(attrs or {})}
    if data_type == "minari":
        save_minari(path, arrays, obs_space, act_space, attrs=meta, overwrite=overwrite)
    else:
        save_hdf5(path, arrays, meta, layout=data_type, overwrite=overwrite)
    print(f"ding: wrote {len(data):,} transitions ({len(returns)} complete episodes, mean return "
          f"{meta['behaviour_return']:.1f}) to {path}")
    return path


def demo_data_path(path: str, data_type: str) -> str:
    """Where a data set of ``data_type`` for ``path`` goes: DI-engine's ``x.pkl`` -> ``x_demos.hdf5`` for HDF5."""
    if data_type in ("hdf5", "d4rl") and path.endswith(".pkl"):
        return path[: -len(".pkl")] + "_demos.hdf5"
    return path


