"""What the battle collectors and evaluator share: several policies acting together in multi-player envs.

A battle env (e.g. ``dizoo/league_demo/game_env.py``) takes one action per player (a list) and returns one
``BaseEnvTimestep`` whose ``obs``, ``reward`` and ``info`` are indexed by player (``obs[i]`` is player ``i``'s view,
``info[i]`` its info dict) and whose ``done`` is shared. :class:`PolicyGroup` turns the policies into one batched
``forward`` so the battle workers run the same :class:`~ding.worker.collector.step_core.EnvStepCore` as the
single-policy ones.

Turn-based games: an env may mark a player's info with ``'acted': False`` when that player's action was ignored in a
step (not its turn). The collectors then build a player's transitions only from its own decisions: the rewards it
receives until its next decision are summed into the decision's transition, whose ``next_obs`` is what the player
sees when it acts again (or the last observation of the episode). Without the key every player acts every step.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ding.envs import BaseEnvTimestep
from ding.torch_utils import to_ndarray
from ding.utils import EnvError


class PolicyGroup:
    """``n`` policies (collect- or eval-mode views, or any object with ``forward(data)`` and ``reset(data_id)``) that
    act together: player ``i`` of every env is played by ``policies[i]``.

    ``forward({env_id: obs})`` gives each policy ``{env_id: obs[i]}`` and returns ``{env_id: {'action': [a_0, ...,
    a_n-1], 'player_output': [out_0, ...]}}`` (actions as numpy arrays).
    """

    def __init__(self, policies: Sequence[Any], owner: str) -> None:
        if isinstance(policies, (str, bytes)) or not isinstance(policies, Sequence) or len(policies) < 2:
            raise TypeError(f"{owner}: policy must be a list of at least 2 policies (one per player), got "
                            f"{type(policies).__name__}")
        for i, p in enumerate(policies):
            if not callable(getattr(p, "forward", None)) or not callable(getattr(p, "reset", None)):
                raise TypeError(f"{owner}: policy[{i}] ({type(p).__name__}) has no forward/reset; pass policy mode "
                                "views (policy.collect_mode / policy.eval_mode) or objects with forward and reset")
        self.policies = list(policies)
        self.owner = owner

    def __len__(self) -> int:
        return len(self.policies)

    def forward(self, data: Mapping[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        n = len(self.policies)
        for env_id, obs in data.items():
            if _num_players(obs) != n:
                raise EnvError(f"{self.owner}: env {env_id} gave an observation for {_num_players(obs)} players, but "
                               f"{n} policies play; a battle env's obs must be indexed by player (obs[i])")
        outputs = [p.forward({env_id: obs[i] for env_id, obs in data.items()}, **kwargs)
                   for i, p in enumerate(self.policies)]
        return {env_id: {"action": [to_ndarray(out[env_id]["action"]) for out in outputs],
                         "player_output": [out[env_id] for out in outputs]}
                for env_id in data}

    def reset(self, data_id: list[int] | None = None) -> None:
        for p in self.policies:
            if data_id is None:
                p.reset()
            else:
                p.reset(data_id)

    def get_attribute(self, name: str) -> Any:
        """The first policy's attribute (its config decides ``n_sample`` / ``n_episode``, like DI-engine's)."""
        get = getattr(self.policies[0], "get_attribute", None)
        if not callable(get):
            raise AttributeError(name)
        return get(name)


def _num_players(obs: Any) -> int:
    try:
        return len(obs)
    except TypeError:
        return 0


def is_abnormal(info: Any) -> bool:
    """Whether the env manager reported the step as failed (a plain dict with ``abnormal``, not per-player infos)."""
    return isinstance(info, Mapping) and bool(info.get("abnormal", False))


def player_timestep(timestep: Any, player: int) -> Any:
    """Player ``player``'s view of a battle timestep: its obs, reward and info, the shared done."""
    if np.ndim(timestep.done) != 0:
        raise EnvError("a battle env's timestep.done must be one bool shared by the players, got "
                       f"{timestep.done!r}")
    return type(timestep)(timestep.obs[player], timestep.reward[player], bool(timestep.done), timestep.info[player])


def player_acted(info: Any) -> bool:
    return not (isinstance(info, Mapping) and info.get("acted", True) is False)


@dataclass
class Decision:
    """A player's action whose outcome is still open: the rewards it got since, and the latest timestep."""

    obs: Any
    output: Any
    reward: Any = None
    timestep: Any = None


@dataclass
class BattleCache:
    """One env's trajectories: finished transitions and the open decision of each player."""

    transitions: list[list[dict]]
    pending: list[Decision | None]

    @classmethod
    def empty(cls, players: int) -> BattleCache:
        return cls([[] for _ in range(players)], [None] * players)

    def __len__(self) -> int:
        return sum(len(t) for t in self.transitions)


def record_step(cache: BattleCache, group: PolicyGroup, sent_obs: Any, sent_out: Mapping[str, Any], timestep: Any,
                train_iter: int, collect: Sequence[bool]) -> None:
    """Add one env step to ``cache``: a player who acted opens a decision (closing its previous one), every player's
    reward joins its open decision; at the end of the episode every open decision becomes a transition. Players
    with ``collect[i]`` False only act."""
    done = bool(timestep.done)
    for i, policy in enumerate(group.policies):
        if not collect[i]:
            continue
        ts = player_timestep(timestep, i)
        pending = cache.pending[i]
        if player_acted(ts.info):
            if pending is not None:
                _close(cache, i, policy, pending, train_iter)
            pending = cache.pending[i] = Decision(sent_obs[i], sent_out["player_output"][i])
            pending.reward = np.array(ts.reward, copy=True)
        elif pending is not None:
            pending.reward = pending.reward + ts.reward
        if pending is not None:
            pending.timestep = ts
            if done:
                _close(cache, i, policy, pending, train_iter)


def _close(cache: BattleCache, player: int, policy: Any, decision: Decision, train_iter: int) -> None:
    ts = decision.timestep
    outcome = BaseEnvTimestep(ts.obs, decision.reward, ts.done, ts.info)
    transition = policy.process_transition(decision.obs, decision.output, outcome)
    transition["collect_iter"] = train_iter
    cache.transitions[player].append(transition)
    cache.pending[player] = None


def player_returns(info: Any, players: int) -> list[float]:
    """Every player's ``eval_episode_return`` from a battle env's last timestep (nan where missing)."""
    out = []
    for i in range(players):
        ret = info[i].get("eval_episode_return") if isinstance(info[i], Mapping) else None
        out.append(float("nan") if ret is None else float(np.asarray(ret, dtype=np.float64).reshape(-1).sum()))
    return out


@dataclass(frozen=True)
class PlayerSpaces:
    """One player's observation and action space of a battle env (what a policy playing that seat must fit)."""

    observation_space: Any
    action_space: Any


def player_spaces(env: Any, player: int = 0) -> PlayerSpaces:
    """Player ``player``'s spaces of a battle env (or env manager): a Box stacked by player gives its row, a Tuple
    of per-player spaces its entry; other spaces are shared by the players and returned as they are."""
    import gymnasium as gym

    obs, act = env.observation_space, env.action_space
    if isinstance(obs, gym.spaces.Box) and len(obs.shape) >= 2:
        obs = gym.spaces.Box(obs.low[player], obs.high[player], dtype=obs.dtype)
    elif isinstance(obs, gym.spaces.Tuple):
        obs = obs.spaces[player]
    if isinstance(act, gym.spaces.Tuple):
        act = act.spaces[player]
    return PlayerSpaces(obs, act)
