"""Any PettingZoo parallel-API env as one ding env: every agent's data stacked along an agent axis.

One env step takes the actions of all agents at once (an ``(n_agent,)`` int array for Discrete actions, ``(n_agent,
dim)`` for Box) and returns

- ``obs``: ``{'agent_state': (n_agent, obs_dim), 'global_state': (state_dim,), 'action_mask': (n_agent, n_actions)}``
  (the global state is the env's ``state()`` where it has one, else the agents' observations concatenated; the mask
  comes from observations that are ``{'observation', 'action_mask'}`` dicts, else all ones);
- ``reward``: the team reward, shape (1,): the sum of the agents' rewards; ``info['agent_reward']`` keeps each
  agent's own, shape (n_agent,);
- ``done`` when every agent has terminated or been truncated; ``info['truncated']`` is True when the episode ended by
  truncation only (``max_cycles``), so the learners bootstrap from the final observation instead of treating it as
  terminal; with ``truncation_is_terminal=True`` that end is the end of the task (``info['truncated']`` False, no
  bootstrapping), as DI-engine's envs count it.

Agents are ``possible_agents`` in a fixed order; an agent that has left the episode early gets zeros (observation,
reward, action mask) until it ends. An AEC env is converted with PettingZoo's ``aec_to_parallel`` (``env.aec=True``);
that conversion needs an env in which all agents act every cycle (MPE, SISL). Turn-based games (the classic family)
go through :mod:`dizoo.petting_zoo.envs.aec_battle_env` instead.
"""
from __future__ import annotations

import importlib
import io
import pickle
from collections.abc import Mapping
from typing import Any

import gymnasium as gym
import numpy as np

from ding.envs import BaseEnv, BaseEnvTimestep
from ding.utils import ENV_REGISTRY

INSTALL_HINT = "install the extra: pip install 'ding[petting_zoo]' (pettingzoo and mpe2)"


def import_env_module(name: str) -> Any:
    """The module of a PettingZoo env (e.g. ``'mpe2.simple_spread_v3'``), or one clear error saying what to install."""
    try:
        return importlib.import_module(name)
    except ImportError as e:
        raise ImportError(f"PettingZoo env module {name!r} could not be imported ({e}); {INSTALL_HINT}") from e


@ENV_REGISTRY.register("petting_zoo_parallel")
class PettingZooParallelEnv(BaseEnv):
    """The general adapter; ``env.env_id`` names the env's module (``'mpe2.simple_spread_v3'``,
    ``'pettingzoo.sisl.multiwalker_v9'``), ``env.env_kwargs`` its keyword arguments."""

    config = dict(
        # Module of the PettingZoo env; its parallel_env(**env_kwargs) (or env(), with aec=True) builds it.
        env_id=None,
        # Keyword arguments of the env's constructor (e.g. N=3, max_cycles=25).
        env_kwargs=dict(),
        # Build the AEC env and convert it with PettingZoo's aec_to_parallel.
        aec=False,
        # Box actions only (DI-engine's key): the agents act in [-1, 1] (the tanh actors of SAC), mapped onto each
        # agent's own bounds; the action space reports Box(-1, 1).
        act_scale=False,
        # An episode cut by truncation (max_cycles) ends the task: done without info['truncated'], so the learners
        # do not bootstrap there (DI-engine's envs). False: bootstrapped from the final observation.
        truncation_is_terminal=False,
    )

    def __init__(self, cfg: Mapping[str, Any] | None = None) -> None:
        merged = dict(self.config, **dict(cfg or {}))
        super().__init__(merged)
        self._env: Any = None
        self._agents: list[str] = []
        self._seed: int | None = None
        self._dynamic_seed = True
        self._rng = np.random.default_rng(0)
        self._first_reset = True
        self._episode_return = 0.0
        self._observation_space: gym.spaces.Dict | None = None
        self._action_space: gym.spaces.Dict | None = None

    # ------------------------------------------------------------------ building
    def _make_env(self) -> Any:
        """The parallel env (subclasses build their own)."""
        env_id = self._cfg.get("env_id")
        if not env_id:
            raise ValueError("petting_zoo_parallel: env.env_id is not set; name the env's module, e.g. "
                             "'mpe2.simple_spread_v3'")
        module = import_env_module(str(env_id))
        kwargs = dict(self._cfg.get("env_kwargs") or {})
        if self._cfg.get("aec"):
            from pettingzoo.utils.conversions import aec_to_parallel

            return aec_to_parallel(module.env(**kwargs))
        return module.parallel_env(**kwargs)

    def _build(self) -> None:
        self._env = self._make_env()
        self._agents = list(self._env.possible_agents)
        spaces = [self._env.observation_space(a) for a in self._agents]
        self._obs_is_dict = isinstance(spaces[0], gym.spaces.Dict)
        inner = [s["observation"] if self._obs_is_dict else s for s in spaces]
        if len({s.shape for s in inner}) != 1:
            shapes = {a: s.shape for a, s in zip(self._agents, inner)}
            raise ValueError(f"{type(self).__name__}: the agents' observations differ in shape {shapes}; stacking them "
                             "along an agent axis needs one shape (pad them in a PettingZoo wrapper, e.g. SuperSuit's "
                             "pad_observations_v0)")
        acts = [self._env.action_space(a) for a in self._agents]
        self._env_action_space = gym.spaces.Dict({a: s for a, s in zip(self._agents, acts)})
        self._act_scale = bool(self._cfg.get("act_scale"))
        if self._act_scale:
            if not all(isinstance(s, gym.spaces.Box) for s in acts):
                raise ValueError(f"{type(self).__name__}: env.act_scale=True maps [-1, 1] onto Box actions, but the "
                                 f"agents act in {acts[0]}; set env.act_scale=False (or env.continuous_actions=True)")
            acts = [gym.spaces.Box(-1.0, 1.0, s.shape, np.float32) for s in acts]
        self._action_space = gym.spaces.Dict({a: s for a, s in zip(self._agents, acts)})
        self._n_actions = int(acts[0].n) if isinstance(acts[0], gym.spaces.Discrete) else int(np.prod(acts[0].shape))
        self._obs_dim = int(np.prod(inner[0].shape))

    def _ensure_built(self) -> None:
        if self._env is None:
            self._build()

    # ------------------------------------------------------------------ the env interface
    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        self._seed, self._dynamic_seed = int(seed), dynamic_seed
        self._rng = np.random.default_rng(seed)
        self._first_reset = True

    def _reset_seed(self) -> int | None:
        if self._seed is None:
            return None
        if not self._dynamic_seed:
            return self._seed  # evaluator envs: the same episodes every evaluation
        return int(self._rng.integers(2 ** 31 - 1))

    def reset(self) -> Any:
        self._ensure_built()
        obs, _ = self._env.reset(seed=self._reset_seed())
        self._episode_return = 0.0
        return self._process_obs(self._stack_obs(obs))

    def step(self, action: Any) -> BaseEnvTimestep:
        self._ensure_built()
        actions = self._split_action(action)
        obs, rew, term, trunc, infos = self._env.step(actions)
        agent_reward = self._agent_rewards(rew)
        team = np.array([agent_reward.sum()], dtype=np.float32)
        self._episode_return += float(team[0])
        terminated = any(bool(term.get(a, False)) for a in self._agents)
        truncated = any(bool(trunc.get(a, False)) for a in self._agents)
        done = not self._env.agents or all(bool(term.get(a, False) or trunc.get(a, False)) for a in self._agents)
        info: dict[str, Any] = {"agent_reward": agent_reward, "agent_info": infos}
        if done:
            info["truncated"] = truncated and not terminated and not self._cfg.get("truncation_is_terminal")
            info["eval_episode_return"] = self._episode_return
        return BaseEnvTimestep(self._process_obs(self._stack_obs(obs)), team, bool(done), info)

    def close(self) -> None:
        if self._env is not None:
            self._env.close()
            self._env = None

    @property
    def agents(self) -> list[str]:
        self._ensure_built()
        return list(self._agents)

    @property
    def agent_num(self) -> int:
        return len(self.agents)

    @property
    def observation_space(self) -> gym.spaces.Dict:
        self._ensure_built()
        if self._observation_space is None:
            self._observation_space = self._obs_space()
        return self._observation_space

    @property
    def action_space(self) -> gym.spaces.Dict:
        self._ensure_built()
        assert self._action_space is not None
        return self._action_space

    @property
    def reward_space(self) -> gym.spaces.Box:
        return gym.spaces.Box(-np.inf, np.inf, shape=(1,), dtype=np.float32)

    def random_action(self) -> np.ndarray:
        return np.stack([np.asarray(s.sample()) for s in self.action_space.values()])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._cfg.get('env_id')!r})"

    # ------------------------------------------------------------------ pickling (exact resume mid-episode)
    def __getstate__(self) -> dict[str, Any]:
        """The env with its PettingZoo env's whole state (world, step count, RNG): PettingZoo's envs pickle
        through gymnasium's ``EzPickle``, which keeps only the constructor's arguments (a fresh env)."""
        state = dict(self.__dict__)
        if state["_env"] is not None:
            buf = io.BytesIO()
            _StatePickler(buf, protocol=pickle.HIGHEST_PROTOCOL).dump(state["_env"])
            state["_env"] = buf.getvalue()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        if isinstance(state.get("_env"), bytes):
            state = dict(state, _env=pickle.loads(state["_env"]))
        self.__dict__.update(state)

    # ------------------------------------------------------------------ per-agent data
    def _stack_obs(self, obs: Mapping[str, Any]) -> dict[str, np.ndarray]:
        n = len(self._agents)
        agent_state = np.zeros((n, self._obs_dim), np.float32)
        mask = np.ones((n, self._n_actions), np.float32)
        for i, a in enumerate(self._agents):
            o = obs.get(a)
            if o is None:  # the agent has left the episode
                mask[i] = 0.0
                continue
            if self._obs_is_dict:
                mask[i] = np.asarray(o["action_mask"], np.float32).reshape(-1)
                o = o["observation"]
            agent_state[i] = np.asarray(o, np.float32).reshape(-1)
        return {"agent_state": agent_state, "action_mask": mask}

    def _global_state(self, agent_state: np.ndarray) -> np.ndarray:
        try:
            return np.asarray(self._env.state(), np.float32).reshape(-1)
        except (AttributeError, NotImplementedError):
            return agent_state.reshape(-1)

    def _process_obs(self, stacked: dict[str, np.ndarray]) -> Any:
        """The observation the learners see (subclasses reshape it; here: agent_state, global_state, action_mask)."""
        return {"agent_state": stacked["agent_state"], "global_state": self._global_state(stacked["agent_state"]),
                "action_mask": stacked["action_mask"]}

    def _obs_space(self) -> gym.spaces.Space:
        """The observation space (``agent_state``, ``global_state``: the env's ``state_space`` where it has one)."""
        n = len(self._agents)
        state_space = getattr(self._env, "state_space", None)
        state_dim = int(np.prod(state_space.shape)) if state_space is not None else n * self._obs_dim
        return _boxes({"agent_state": (n, self._obs_dim), "global_state": (state_dim,),
                       "action_mask": (n, self._n_actions)})

    def _agent_rewards(self, rew: Mapping[str, Any]) -> np.ndarray:
        return np.array([float(rew.get(a, 0.0)) for a in self._agents], np.float32)

    def _split_action(self, action: Any) -> dict[str, Any]:
        """``(n_agent,)`` / ``(n_agent, dim)`` actions (or a dict by agent name) -> the env's dict, live agents only."""
        live = set(self._env.agents)
        if isinstance(action, Mapping):
            return {a: action[a] for a in self._agents if a in live}
        arr = np.asarray(action)
        if arr.shape[:1] != (len(self._agents),):
            raise ValueError(f"{type(self).__name__}.step: expected one action per agent ({len(self._agents)} agents: "
                             f"{self._agents}), got an array of shape {arr.shape}")
        discrete = isinstance(next(iter(self.action_space.values())), gym.spaces.Discrete)
        out = {}
        for i, a in enumerate(self._agents):
            if a in live:
                out[a] = int(arr[i].reshape(-1)[0]) if discrete else self._env_action(a, arr[i])
        return out

    def _env_action(self, agent: str, action: np.ndarray) -> np.ndarray:
        """A Box action as the env takes it: with ``act_scale``, [-1, 1] mapped linearly onto the agent's bounds."""
        action = action.astype(np.float32)
        if not self._act_scale:
            return action
        space = self._env_action_space[agent]
        low, high = space.low.astype(np.float32), space.high.astype(np.float32)
        return np.clip(low + (np.clip(action, -1.0, 1.0) + 1.0) * 0.5 * (high - low), low, high)


class _StatePickler(pickle.Pickler):
    """Pickles ``EzPickle`` objects by their attributes (their own reduction drops the state); rendering surfaces
    (pygame) are left out and come back as None."""

    def reducer_override(self, obj: Any) -> Any:
        from gymnasium.utils import EzPickle

        if type(obj).__module__.startswith("pygame"):
            return (type(None), ())
        if isinstance(obj, EzPickle):
            return (object.__new__, (type(obj),), dict(obj.__dict__), None, None, _set_attributes)
        return NotImplemented


def _set_attributes(obj: Any, state: dict[str, Any]) -> None:
    obj.__dict__.update(state)


def _boxes(shapes: Mapping[str, tuple[int, ...]]) -> gym.spaces.Dict:
    return gym.spaces.Dict({k: gym.spaces.Box(-np.inf, np.inf, shape=v, dtype=np.float32) for k, v in shapes.items()})
