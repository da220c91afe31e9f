"""``load_policy``: a trained policy from a checkpoint or a run directory, acting without envs or workers."""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ding import __version__
from ding.config import compile_config
from ding.engine.run_checkpoint import resolve_run
from ding.envs import get_vec_env_setting
from ding.policy import create_policy
from ding.policy.export import SUFFIXES, ExportedFile, export_policy
from ding.utils import CheckpointError, ExportError
from ding.worker import load_checkpoint_file


class LoadedPolicy:
    """A policy with the weights of one checkpoint: ``compute_single_action(obs)`` / ``compute_actions(batch)``.

    Actions are the policy's eval-mode actions (greedy / the distribution's mode), exactly what ding's evaluator
    hands to its envs, and in the same form: a Discrete action is an int64 scalar; a continuous action of a policy
    that acts in [-1, 1] with ``env.act_scale=True`` is still in [-1, 1] (``ding.envs.scale_action(a, low, high)``
    maps it onto the env's bounds, as the env wrapper does). ``explore=True`` uses the collect mode instead (pass
    what it needs, e.g. ``eps=0.05`` for the DQN family). Recurrent policies (R2D2) keep a hidden state per
    ``env_id`` between calls; :meth:`reset` clears it at an episode's end.
    """

    def __init__(self, policy: Any, cfg: Any, checkpoint: str, train_iter: int | None,
                 league_players: dict[str, int] | None = None) -> None:
        self.policy = policy
        self.cfg = cfg
        self.checkpoint = checkpoint
        self.train_iter = train_iter
        self.league_players = dict(league_players or {})  # a league run's active players per type (for export)

    def compute_actions(self, obs_batch: Sequence[Any] | np.ndarray, explore: bool = False,
                        env_ids: Sequence[int] | None = None, **policy_kwargs: Any) -> Any:
        """Actions for a batch of observations (first axis, or a list of dict observations), in order: a numpy
        array stacked over the batch."""
        ids = list(range(len(obs_batch))) if env_ids is None else list(env_ids)
        if len(ids) != len(obs_batch):
            raise ValueError(f"LoadedPolicy.compute_actions: {len(obs_batch)} observations but {len(ids)} env_ids")
        out = self._forward({i: o for i, o in zip(ids, obs_batch)}, explore, policy_kwargs)
        return np.stack([np.asarray(out[i]["action"]) for i in ids])

    def compute_single_action(self, obs: Any, explore: bool = False, env_id: int = 0, **policy_kwargs: Any) -> Any:
        """The action for one observation (as the env returned it, without a batch axis)."""
        return self._forward({env_id: obs}, explore, policy_kwargs)[env_id]["action"]

    def reset(self, env_ids: Sequence[int] | None = None) -> None:
        """Forget the per-env state of recurrent policies (all envs, or ``env_ids``)."""
        ids = None if env_ids is None else list(env_ids)
        self.policy.eval_mode.reset(ids)
        self.policy.collect_mode.reset(ids)

    def export(self, path: str | os.PathLike, format: str = "onnx") -> ExportedFile:  # noqa: A002
        """Write the eval action as an ONNX or TorchScript file: a batch ``obs`` in, ``action`` out (the
        :meth:`compute_actions` of those observations), ``state`` / ``next_state`` for recurrent policies and
        ``env_action`` where the env scales actions (``env.act_scale``). See docs/export.md."""
        players = self.league_players
        if players:
            if sum(players.values()) > 1:
                raise ExportError(
                    f"export: '{self.checkpoint}' comes from a league run with {sum(players.values())} active players "
                    f"({', '.join(f'{k}={v}' for k, v in players.items())}); an exported file holds one policy. Give "
                    "the checkpoint of one player (with a config of that player's policy) instead")
        obs_dtype, bounds = _env_facts(self.cfg)
        # an env that normalises observations does it with running statistics of its own (not in the checkpoint):
        # the file, like the policy, takes them normalised
        env_norm = bool((self.cfg.env.get("norm_obs") or {}).get("use_norm"))
        return export_policy(self.policy, path, format, obs_dtype=obs_dtype, env_action_bounds=bounds,
                             metadata={"checkpoint": os.path.basename(self.checkpoint), "train_iter": self.train_iter,
                                       "ding_version": __version__, "env_normalises_obs": env_norm})

    def _forward(self, data: dict[int, Any], explore: bool, policy_kwargs: dict[str, Any]) -> dict[int, Any]:
        mode = self.policy.collect_mode if explore else self.policy.eval_mode
        if policy_kwargs and not explore:
            raise TypeError(f"LoadedPolicy: {sorted(policy_kwargs)} are collect-mode arguments; pass explore=True "
                            "with them")
        with torch.no_grad():
            return mode.forward(data, **policy_kwargs)


def load_policy(path: str | os.PathLike, config: str | os.PathLike | tuple[dict, dict] | None = None,
                which: str = "best") -> LoadedPolicy:
    """Load a trained policy for acting.

    ``path`` is a checkpoint file (``<run>/ckpt/ckpt_best.pth.tar``, ``iteration_N.pth.tar``) or a run directory;
    for a directory ``which`` picks ``'best'`` (the evaluator's best, falling back to the newest when there is
    none) or ``'latest'`` (the newest ``iteration_N``). Any mode's run: serial, parallel (``collector_ckpt/``),
    league. The config is the run's ``total_config.py`` unless ``config`` gives one; only its env and policy parts
    are used (:mod:`ding.engine.run_checkpoint`). Nothing else is built: no envs, no workers, no run directory.
    """
    if which not in ("best", "latest"):
        raise ValueError(f"load_policy: which must be 'best' or 'latest', got {which!r}")
    run = resolve_run(path, config, which, where="load_policy")
    ckpt = run.checkpoint
    cfg = compile_config(run.main, seed=int(run.main.get("seed", 0)), auto=True, create_cfg=run.create,
                         save_cfg=False, source=run.source)
    state = load_checkpoint_file(ckpt)
    if "model" not in state:
        raise CheckpointError(f"load_policy: checkpoint '{ckpt}' has no 'model' entry (it holds {sorted(state)}); "
                              "give a checkpoint written by a ding run")
    policy = create_policy(cfg.policy, enable_field=["eval", "collect"])
    try:
        policy.eval_mode.load_state_dict({"model": state["model"]})
    except RuntimeError as e:
        raise CheckpointError(f"load_policy: the weights in '{ckpt}' do not fit the model of its config: {e}") from e
    policy.eval_mode.reset()
    policy.collect_mode.reset()
    last_iter = state.get("last_iter")
    return LoadedPolicy(policy, cfg, ckpt, None if last_iter is None else int(last_iter), run.league_players)


def default_export_path(policy: LoadedPolicy, fmt: str) -> str:
    """``./<run directory name>_<checkpoint name>.onnx`` (``.pt`` for TorchScript), in the working directory: an
    export never writes into a run's directory unless told to."""
    run = os.path.basename(os.path.dirname(os.path.dirname(os.path.abspath(policy.checkpoint))))
    stem = os.path.basename(policy.checkpoint).split(".")[0]
    return f"{run}_{stem}{SUFFIXES.get(fmt, '.' + fmt)}"


def _env_facts(cfg: Any) -> tuple[str, tuple[np.ndarray, np.ndarray] | None]:
    """The observation dtype of the config's env (``'uint8'`` pixels or ``'float32'``) and, when the env scales
    actions (``env.act_scale``), the bounds it scales them onto; read from one evaluator env, built and closed."""
    env_fn, _, env_cfgs = get_vec_env_setting(cfg.env, collect=False)
    env = env_fn(env_cfgs[0])
    try:
        dtype = getattr(env.observation_space, "dtype", None)
        bounds = getattr(env, "env_action_bounds", None) if cfg.env.get("act_scale") else None
        if cfg.env.get("act_scale") and bounds is None:
            raise ExportError(f"export: env.act_scale=True but {env!r} does not tell its action bounds "
                              "(env_action_bounds); the exported file cannot scale actions as the env does")
    finally:
        env.close()
    return ("uint8" if dtype == np.uint8 else "float32"), bounds
