"""``load_policy``: a trained policy from a checkpoint or a run directory, acting without envs or workers."""
from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np
import torch

from ding.config import compile_config
from ding.engine.run_checkpoint import resolve_run
from ding.policy import create_policy
from ding.utils import CheckpointError
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

    def __init__(self, policy: Any, cfg: Any, checkpoint: str, train_iter: int | None) -> None:
        self.policy = policy
        self.cfg = cfg
        self.checkpoint = checkpoint
        self.train_iter = train_iter

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
    return LoadedPolicy(policy, cfg, ckpt, None if last_iter is None else int(last_iter))

