"""MPE simple spread under DI-engine's name (env type ``petting_zoo``), its config keys and its observation dict.

Built on mpe2's ``simple_spread_v3`` (where the MPE scenarios live since PettingZoo 1.25). DI-engine 0.5.3 ran
PettingZoo 1.22's ``simple_spread_v2``; ``env_id='simple_spread_v2'`` runs v3 with one notice (same world, same
18-dim observation for 3 agents). Rewards are DI-engine's: each agent gets the global landmark reward plus its own
collision penalty (mpe2 with ``local_ratio=0.5`` gives half of both, so they are doubled), the team reward is their
sum.

Observation (``agent_obs_only=False``): ``agent_state`` (n_agent, obs_dim), ``global_state`` (state_dim,) — or, with
``agent_specific_global_state``, (n_agent, obs_dim + state_dim): each agent's own observation before the global
state —, ``agent_alone_state`` (without the other agents' positions), ``agent_alone_padding_state`` (those positions
zeroed) and ``action_mask`` (all ones). ``agent_obs_only=True``: the (n_agent, obs_dim) array alone.
The episode ends at ``max_cycles``, and that is the end of the task (``truncation_is_terminal=True``, as in
DI-engine's env): ``done`` with ``info['truncated']`` False, so the learners do not bootstrap there. The observation
has no clock, and simple spread's return is the sum over its ``max_cycles`` steps; MAPPO on DI-engine's file learns
faster so than with bootstrapping from the final observation (docs/multi_agent.md). ``truncation_is_terminal=False``
reports the end as a truncation (``info['truncated']``), bootstrapped by the learners.
"""
from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import numpy as np

from ding.utils import ENV_REGISTRY

from .parallel_adapter import PettingZooParallelEnv, _boxes, import_env_module

_ENV_IDS = ("simple_spread_v2", "simple_spread_v3")
_log = logging.getLogger(__name__)
_noticed = False


@ENV_REGISTRY.register("petting_zoo")
class PettingZooEnv(PettingZooParallelEnv):
    """DI-engine's ``petting_zoo`` env: simple spread with ``n_agent`` agents and ``n_landmark`` landmarks."""

    config = dict(
        # DI-engine's family name ('mpe': the MPE scenarios, from mpe2).
        env_family="mpe",
        # 'simple_spread_v3', or DI-engine's 'simple_spread_v2' (run as v3, with one notice).
        env_id="simple_spread_v3",
        n_agent=3,
        # simple spread has as many landmarks as agents: must equal n_agent.
        n_landmark=3,
        max_cycles=25,
        # Observe only the stacked agent observations (no dict).
        agent_obs_only=False,
        # global_state per agent: (n_agent, obs_dim + state_dim), each agent's observation first (MAPPO, MASAC).
        agent_specific_global_state=False,
        continuous_actions=False,
        # continuous_actions only: the agents act in [-1, 1] (tanh actors: `sac` with multi_agent=True), mapped
        # onto mpe2's [0, 1]; without it they act in [0, 1] directly.
        act_scale=False,
        # The end at max_cycles ends the task (done, no bootstrapping), as DI-engine's env has it; False: a
        # truncation (info['truncated']), bootstrapped from the final observation.
        truncation_is_terminal=True,
    )

    def __init__(self, cfg: Mapping[str, Any] | None = None) -> None:
        super().__init__(cfg)
        c = self._cfg
        if c["env_family"] != "mpe":
            raise ValueError(f"petting_zoo env: env.env_family {c['env_family']!r} is not supported; 'mpe' (simple "
                             "spread) is; other PettingZoo envs run through env type 'petting_zoo_parallel'")
        if c["env_id"] not in _ENV_IDS:
            raise ValueError(f"petting_zoo env: env.env_id {c['env_id']!r} is not one of {_ENV_IDS}; other PettingZoo "
                             "envs run through env type 'petting_zoo_parallel'")
        self._n, self._n_landmark = int(c["n_agent"]), int(c["n_landmark"])
        if self._n < 1 or self._n_landmark != self._n:
            raise ValueError(f"petting_zoo env: simple spread has as many landmarks as agents; env.n_agent is "
                             f"{self._n} and env.n_landmark {self._n_landmark}: set both to the same number >= 1")
        if c.get("act_scale") and not c.get("continuous_actions"):
            raise ValueError("petting_zoo env: env.act_scale=True maps [-1, 1] onto continuous actions, but "
                             "env.continuous_actions is False; set env.continuous_actions=True or env.act_scale=False")
        self._agent_obs_only = bool(c["agent_obs_only"])
        self._agent_specific = bool(c["agent_specific_global_state"])

    @staticmethod
    def create_collector_env_cfg(cfg: dict) -> list[dict]:
        return PettingZooParallelEnv.create_collector_env_cfg(_current_env_id(cfg))

    @staticmethod
    def create_evaluator_env_cfg(cfg: dict) -> list[dict]:
        return PettingZooParallelEnv.create_evaluator_env_cfg(_current_env_id(cfg))

    def _make_env(self) -> Any:
        _current_env_id(self._cfg)
        module = import_env_module("mpe2.simple_spread_v3")
        return module.parallel_env(N=self._n, local_ratio=0.5, max_cycles=int(self._cfg["max_cycles"]),
                                   continuous_actions=bool(self._cfg["continuous_actions"]))

    def _agent_rewards(self, rew: Mapping[str, Any]) -> np.ndarray:
        return 2.0 * super()._agent_rewards(rew)  # DI-engine's global + local reward

    # obs: [self_vel (2), self_pos (2), landmarks (2 * n_landmark), other agents (2 * (n - 1)), comm (2 * (n - 1))]
    def _process_obs(self, stacked: dict[str, np.ndarray]) -> Any:
        obs = stacked["agent_state"]
        if self._agent_obs_only:
            return obs
        n, comm = self._n, 2 * (self._n - 1)
        landmarks_end = 4 + 2 * self._n_landmark
        global_state = np.concatenate([obs[0, 2:-comm], obs[:, 0:2].reshape(-1), obs[:, -comm:].reshape(-1)])
        if self._agent_specific:
            global_state = np.concatenate([obs, np.broadcast_to(global_state, (n, global_state.shape[0]))], axis=1)
        alone = np.concatenate([obs[:, :landmarks_end], obs[:, -comm:]], axis=1)
        padding = np.concatenate([obs[:, :landmarks_end], np.zeros((n, comm), np.float32), obs[:, -comm:]], axis=1)
        return {"agent_state": obs, "global_state": global_state.astype(np.float32), "agent_alone_state": alone,
                "agent_alone_padding_state": padding, "action_mask": stacked["action_mask"]}

    def _obs_space(self) -> Any:
        n, obs_dim = self._n, self._obs_dim
        state_dim = 4 * n + 2 * self._n_landmark + 2 * n * (n - 1)
        if self._agent_obs_only:
            return _boxes({"agent_state": (n, obs_dim)})["agent_state"]
        return _boxes({
            "agent_state": (n, obs_dim),
            "global_state": (n, obs_dim + state_dim) if self._agent_specific else (state_dim,),
            "agent_alone_state": (n, 4 + 2 * self._n_landmark + 2 * (n - 1)),
            "agent_alone_padding_state": (n, obs_dim),
            "action_mask": (n, self._n_actions),
        })

    def __repr__(self) -> str:
        return f"PettingZooEnv(simple_spread, n_agent={self._n})"


def _current_env_id(cfg: Mapping[str, Any]) -> dict:
    """``cfg`` with DI-engine's ``simple_spread_v2`` replaced by ``simple_spread_v3`` (one notice per process: the
    env configs are made in the main process, so a run with subprocess envs gives one)."""
    global _noticed
    out = dict(cfg)
    if out.get("env_id") == "simple_spread_v2":
        out["env_id"] = "simple_spread_v3"
        if not _noticed:
            _noticed = True
            _log.warning("petting_zoo env: env_id 'simple_spread_v2' (PettingZoo < 1.25) runs as mpe2's "
                         "simple_spread_v3, the same scenario")
    return out
