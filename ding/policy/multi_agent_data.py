"""What the multi-agent policies (MAPPO, QMIX/VDN, MASAC) share: batching DI-engine's per-agent observation dicts,
per-agent epsilon-greedy over the available actions, and the set-up check of a multi-agent config against its env.

A multi-agent observation is a dict with ``agent_state`` (A, obs_dim), usually ``global_state`` ((state_dim,) or
agent-specific (A, state_dim)) and ``action_mask`` (A, n_actions); the policies act for all A agents of an env at
once (action (A,)). The single-agent policies never come here.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import torch

from ding.utils import ConfigError

OBS_KEYS = ("agent_state", "global_state", "action_mask")  # what the models read; other keys are not batched


def stack_obs_dicts(obs: Sequence[Any]) -> Any:
    """A list of observation dicts -> one dict of stacked arrays (a list of arrays -> one array)."""
    if isinstance(obs[0], Mapping):
        return {k: np.stack([o[k] for o in obs]) for k in obs[0] if k in OBS_KEYS}
    return np.stack(obs)


def batch_agent_obs(data: Mapping[int, Any], device: torch.device, model: Any,
                    where: str) -> tuple[list[int], dict[str, torch.Tensor]]:
    """``{env_id: obs}`` -> ``(env_ids, {'agent_state': (B, A, obs_dim), ...})`` as float tensors on ``device``; an
    ``agent_obs_only`` observation (A, obs_dim) becomes ``{'agent_state': ...}``. The agent count and observation
    size are checked against the model so a wrong env fails here with the numbers, not inside a matrix product."""
    env_ids = list(data.keys())
    stacked = stack_obs_dicts(list(data.values()))
    if not isinstance(stacked, dict):
        stacked = {"agent_state": stacked}
    if "agent_state" not in stacked:
        raise ValueError(f"{where}: the observation has no 'agent_state' (keys {sorted(stacked)}); multi-agent "
                         "policies need DI-engine's multi-agent observation dict (env type 'petting_zoo')")
    agent_num, obs_dim = getattr(model, "agent_num", None), agent_obs_dim(model)
    got = stacked["agent_state"].shape[1:]
    if len(got) != 2 or (agent_num is not None and got[0] != agent_num) or (obs_dim is not None and got[1] != obs_dim):
        raise ValueError(f"{where}: agent_state has shape {tuple(got)} per env but the model expects "
                         f"({agent_num}, {obs_dim}) (policy.model.agent_num, obs size); check env.n_agent against "
                         "the model config")
    out = {k: torch.from_numpy(np.asarray(v, np.float32)) for k, v in stacked.items()}
    if device.type != "cpu":
        out = {k: v.to(device) for k, v in out.items()}
    return env_ids, out


def collate_agent_transitions(data: Any, action_dtype: Any, ignore_done: bool, device: torch.device,
                              where: str) -> dict[str, Any]:
    """A list of multi-agent transitions -> ``{'obs', 'next_obs'}`` (dicts of (B, A, ...) float tensors),
    ``action`` (B, A) int64 or (B, A, dim) float32 (``action_dtype``), and the team ``reward`` / ``done`` broadcast
    over the agents, (B, A) floats (``done`` zeroed with ``ignore_done``), on ``device``."""
    from ding.utils.data import SAMPLE_BATCH_TYPES, default_collate

    if not isinstance(data, SAMPLE_BATCH_TYPES) or len(data) == 0:
        raise ValueError(f"{where}: expected a non-empty list of samples, got {type(data).__name__}")
    missing = [k for k in ("obs", "next_obs", "action", "reward", "done") if k not in data[0]]
    if missing:
        raise ValueError(f"{where}: samples lack key(s) {missing}; they have {sorted(data[0])}")
    batch: dict[str, Any] = {}
    for k in ("obs", "next_obs"):
        stacked = stack_obs_dicts([d[k] for d in data])
        if not isinstance(stacked, dict):
            stacked = {"agent_state": stacked}
        batch[k] = {key: torch.from_numpy(np.asarray(v, np.float32)) for key, v in stacked.items()}
    action = torch.from_numpy(np.stack([np.asarray(d["action"], action_dtype) for d in data]))
    agents = action.shape[1]
    batch["action"] = action
    for k in ("reward", "done"):
        batch[k] = default_collate([d[k] for d in data]).float().reshape(len(data), -1)[:, :1].expand(-1, agents)
    if ignore_done:
        batch["done"] = torch.zeros_like(batch["done"])
    if device.type != "cpu":
        from .actor_critic import _to_device

        batch = _to_device(batch, device)
    return batch


def agent_obs_dim(model: Any) -> int | None:
    """The per-agent observation size a multi-agent model reads (``agent_obs_shape`` or ``obs_shape``)."""
    dim = getattr(model, "agent_obs_shape", None)
    return int(dim) if dim is not None else (int(model.obs_shape) if getattr(model, "obs_shape", None) else None)


def masked_epsilon_greedy(q: np.ndarray, avail: np.ndarray | None, eps: float) -> np.ndarray:
    """Per-agent greedy actions of Q-values (B, A, n) over the available actions (``avail`` > 0), each replaced by a
    uniformly drawn available action with probability ``eps`` (numpy's global RNG) -> int64 (B, A)."""
    if avail is not None:
        q = np.where(avail > 0, q, -np.inf)
    action = q.argmax(-1)
    if eps > 0:
        explore = np.random.random_sample(action.shape) < eps
        if explore.any():
            weights = np.ones_like(q) if avail is None else (avail > 0).astype(np.float64)
            cdf = np.cumsum(weights, -1)
            u = np.random.random_sample(action.shape + (1,)) * cdf[..., -1:]
            random_action = (cdf <= u).sum(-1)
            action = np.where(explore, random_action, action)
    return action.astype(np.int64)


def check_multi_agent_fit(policy: Any, obs_space: Any, act_space: Any, name: str) -> list[str]:
    """The problems of a multi-agent policy on an env (empty when it fits): the agent count and the per-agent
    observation size against ``agent_state``, the model's ``global_obs_shape`` against ``global_state`` (which must be
    there when the model reads it), the action count against the agents' Discrete spaces."""
    import gymnasium as gym

    model = policy._get_attribute("model")
    cls = type(policy).__name__
    if not isinstance(obs_space, gym.spaces.Dict) or "agent_state" not in obs_space.spaces:
        return [f"policy.type: {cls} is a multi-agent policy and needs DI-engine's multi-agent observation dict "
                f"('agent_state', 'global_state', 'action_mask'), but {name} observes {obs_space}; use env type "
                "'petting_zoo' (with env.agent_obs_only=False) or 'petting_zoo_parallel'"]
    problems = []
    agent_shape: tuple[int, ...] = tuple(obs_space["agent_state"].shape or ())
    agent_num, obs_dim = getattr(model, "agent_num", None), agent_obs_dim(model)
    if agent_num is not None and agent_shape[0] != agent_num:
        problems.append(f"policy.model.agent_num: {agent_num} but {name} has {agent_shape[0]} agents (agent_state "
                        f"{agent_shape}); set policy.model.agent_num={agent_shape[0]} or env.n_agent={agent_num}")
    if obs_dim is not None and agent_shape[-1] != obs_dim:
        key = "agent_obs_shape" if hasattr(model, "agent_obs_shape") else "obs_shape"
        problems.append(f"policy.model.{key}: {obs_dim} but each agent of {name} observes {agent_shape[-1]} numbers "
                        f"(agent_state {agent_shape}); set policy.model.{key}={agent_shape[-1]}")
    global_dim = getattr(model, "global_obs_shape", None)
    reads_global = global_dim is not None and getattr(model, "critic_input", "global_state") == "global_state" \
        and getattr(model, "reads_global_state", True)
    if reads_global:
        if "global_state" not in obs_space.spaces:
            problems.append(f"policy.model.global_obs_shape: the model reads a global state but {name}'s observation "
                            f"has none (keys {sorted(obs_space.spaces)}); set env.agent_obs_only=False")
        elif tuple(obs_space["global_state"].shape or (0,))[-1] != int(global_dim or 0):
            gshape: tuple[int, ...] = tuple(obs_space["global_state"].shape or ())
            hint = (" (env.agent_specific_global_state changes it: on, each agent's observation comes first)"
                    if len(gshape) == 2 or getattr(policy._get_attribute("cfg"), "multi_agent", False) else "")
            problems.append(f"policy.model.global_obs_shape: {global_dim} but {name}'s global_state has shape "
                            f"{gshape}; set policy.model.global_obs_shape={gshape[-1]}{hint}")
    if isinstance(act_space, gym.spaces.Dict):
        spaces: list[Any] = list(act_space.spaces.values())
        if getattr(policy, "agent_action_space", gym.spaces.Discrete) is gym.spaces.Box:
            problems += _box_problems(cls, getattr(model, "action_shape", None), spaces, name)
            return problems
        n_act = getattr(model, "action_shape", None)
        if not all(isinstance(s, gym.spaces.Discrete) for s in spaces):
            problems.append(f"policy.type: {cls} acts in Discrete action spaces, but {name}'s agents have "
                            f"{spaces[0]}; set env.continuous_actions=False (Box actions: policy type 'sac' with "
                            "policy.multi_agent=True)")
        elif n_act is not None and int(spaces[0].n) != int(n_act):
            problems.append(f"policy.model.action_shape: {n_act} but {name}'s agents have {spaces[0].n} actions; set "
                            f"policy.model.action_shape={spaces[0].n}")
    return problems


def _box_problems(cls: str, n_act: Any, spaces: list[Any], name: str) -> list[str]:
    """A tanh actor's agents need Box(-1, 1) actions of the model's size (``env.act_scale=True`` maps them)."""
    import gymnasium as gym

    space = spaces[0]
    if not all(isinstance(s, gym.spaces.Box) for s in spaces):
        return [f"policy.type: {cls} acts in Box action spaces, but {name}'s agents have {space}; set "
                "env.continuous_actions=True (Discrete actions: policy type 'discrete_sac')"]
    problems = []
    if n_act is not None and tuple(space.shape) != (int(n_act),):
        problems.append(f"policy.model.action_shape: {n_act} but {name}'s agents act in {space}; set "
                        f"policy.model.action_shape={int(np.prod(space.shape))}")
    if not (np.all(space.low == -1.0) and np.all(space.high == 1.0)):
        problems.append(f"env.act_scale: {cls} acts in [-1, 1] (a tanh actor) but {name}'s agents act in {space}; "
                        "set env.act_scale=True (maps [-1, 1] onto the env's bounds)")
    return problems


def require_multi_agent_fit(policy: Any, env: Any, env_name: str | None = None) -> None:
    """Raise one ``ConfigError`` listing every problem :func:`check_multi_agent_fit` finds."""
    problems = check_multi_agent_fit(policy, env.observation_space, env.action_space,
                                     f"env '{env_name}'" if env_name else "the env")
    if problems:
        raise ConfigError("\n".join(problems))
