"""Atari games on ale-py (the ``[atari]`` extra; the ROMs ship in its wheel) with the DeepMind preprocessing.

Env type ``'atari'`` with DI-engine's config keys (``env_id``, ``frame_stack``, ``collector_env_num``, ...). Collector
envs train on lives with clipped rewards; evaluator envs play full games with the game's own rewards (``is_train``,
set by ``create_collector_env_cfg`` / ``create_evaluator_env_cfg`` as in DI-engine). Observations are uint8
``(frame_stack, 84, 84)``, oldest frame first; the models scale them to [0, 1] on their own device.

DI-engine's ids (``PongNoFrameskip-v4``: no frame skip in the emulator, no sticky actions) run as ale-py's
``ALE/Pong-v5`` with ``frameskip=1`` and ``repeat_action_probability=0``, which is what those ids meant; one notice
line says so. ``ALE/<Game>-v5`` ids keep v5's sticky actions (0.25). The frame skip is always the preprocessing's.
"""
from __future__ import annotations

import copy
import logging
import re
from typing import Any

import numpy as np

from ding.config.ranges import at_least
from ding.envs import BaseEnv, BaseEnvTimestep
from ding.utils import ENV_REGISTRY, EnvError

from .atari_wrappers import AleEmulator, DeepMindPreprocessing

logger = logging.getLogger(__name__)

_V4_ID = re.compile(r"^(?P<game>[A-Za-z0-9]+?)NoFrameskip-v4$")
_V5_ID = re.compile(r"^ALE/(?P<game>[A-Za-z0-9]+)-v5$")
_noticed: set[str] = set()


def resolve_atari_id(env_id: str, notice: bool = True) -> tuple[str, float]:
    """``(ale-py id, repeat_action_probability)`` for a config's ``env_id``; DI-engine's ``<Game>NoFrameskip-v4`` maps
    to ``ALE/<Game>-v5`` without sticky actions (one notice line per id and process)."""
    if not isinstance(env_id, str):
        raise EnvError(f"atari env: env.env_id must be a string such as 'PongNoFrameskip-v4', got {env_id!r}")
    m = _V4_ID.match(env_id)
    if m:
        ale_id = f"ALE/{m.group('game')}-v5"
        if notice and env_id not in _noticed:
            _noticed.add(env_id)
            logger.warning("atari: env_id %r runs as ale-py's %r with frameskip=1 and repeat_action_probability=0 "
                           "(the v4 semantics; the preprocessing skips 4 frames)", env_id, ale_id)
        return ale_id, 0.0
    if _V5_ID.match(env_id):
        return env_id, 0.25
    raise EnvError(f"atari env: env.env_id {env_id!r} is not an Atari id this env knows; use DI-engine's "
                   "'<Game>NoFrameskip-v4' (e.g. 'PongNoFrameskip-v4') or ale-py's 'ALE/<Game>-v5' ('ALE/Pong-v5')")


def make_ale_env(env_id: str, max_episode_frames: int, sticky: float | None = None) -> Any:
    """The bare ale-py gymnasium env (grayscale, minimal action set, frameskip 1) for ``env_id``; ``sticky`` (the
    repeat-action probability) defaults to the id's own."""
    try:
        import ale_py
        import gymnasium as gym
    except ImportError as e:
        raise EnvError(f"the atari env needs ale-py, which is not installed ({e}); install it with: "
                       "pip install -e '.[atari]'") from e
    gym.register_envs(ale_py)
    ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)  # no banner per env process
    ale_id, id_sticky = resolve_atari_id(env_id)
    sticky = id_sticky if sticky is None else float(sticky)
    try:
        return gym.make(ale_id, obs_type="grayscale", frameskip=1, repeat_action_probability=sticky,
                        full_action_space=False, max_num_frames_per_episode=int(max_episode_frames),
                        disable_env_checker=True).unwrapped
    except gym.error.Error as e:
        raise EnvError(f"atari env: ale-py cannot build {ale_id!r} (from env.env_id {env_id!r}): {e}") from e


@ENV_REGISTRY.register("atari")
class AtariEnv(BaseEnv):
    """One Atari game with the DeepMind preprocessing (``dizoo/atari/envs/atari_wrappers.py``)."""

    config = dict(
        env_id="PongNoFrameskip-v4",  # DI-engine's '<Game>NoFrameskip-v4' or ale-py's 'ALE/<Game>-v5'
        frame_stack=4,  # frames per observation, oldest first
        frame_skip=4,  # emulator frames per agent step (the last two max-pooled)
        noop_max=30,  # a new game starts with 1..noop_max no-op frames
        fire_reset=True,  # press FIRE (then 2) at the start of a game or life in games that need it
        max_episode_frames=108000,  # emulator frames per game (30 minutes of play), then the game is truncated
        is_train=True,  # training: lives end episodes and rewards are clipped; set per env by create_*_env_cfg
        repeat_action_probability=None,  # sticky actions; None: the id's own (v4 ids: 0, ALE/...-v5: 0.25)
    )
    config_ranges = {
        "frame_stack": at_least(1, integer=True),
        "frame_skip": at_least(1, integer=True),
        "noop_max": at_least(0, integer=True),
        "max_episode_frames": at_least(1, integer=True),
        "repeat_action_probability": at_least(0),
    }

    def __init__(self, cfg: dict | None = None) -> None:
        merged = dict(self.config)
        merged.update(dict(cfg or {}))
        super().__init__(merged)
        self._cfg: dict[str, Any] = merged
        resolve_atari_id(merged["env_id"])  # a bad id fails here; a v4 id gets its notice (once per process)
        self._game: DeepMindPreprocessing | None = None
        self._emu: AleEmulator | None = None
        self._seed: int | None = None
        self._dynamic_seed = True
        self._seed_pending = False
        self._episode_return = 0.0
        self._observation_space: Any = None
        self._action_space: Any = None

    def _build(self) -> DeepMindPreprocessing:
        import gymnasium as gym

        cfg = self._cfg
        self._emu = AleEmulator(make_ale_env(cfg["env_id"], cfg["max_episode_frames"],
                                             cfg.get("repeat_action_probability")))
        train = bool(cfg["is_train"])
        game = DeepMindPreprocessing(
            self._emu, frame_skip=int(cfg["frame_skip"]), frame_stack=int(cfg["frame_stack"]),
            noop_max=int(cfg["noop_max"]), episodic_life=train, clip_reward=train, fire_reset=bool(cfg["fire_reset"]),
            rng=np.random.default_rng(self._seed))
        self._observation_space = gym.spaces.Box(0, 255, (int(cfg["frame_stack"]), 84, 84), np.uint8)
        self._action_space = gym.spaces.Discrete(self._emu.n_actions)
        if self._seed is not None:
            self._action_space.seed(self._seed)
        return game

    def seed(self, seed: int, dynamic_seed: bool = True) -> None:
        """``dynamic_seed``: the first game is seeded, later games continue the emulator's RNG (each differs,
        reproducibly); otherwise every game starts from ``seed`` (the same no-ops and game each evaluation)."""
        self._seed = int(seed)
        self._dynamic_seed = bool(dynamic_seed)
        self._seed_pending = True
        if self._game is not None:
            self._game.rng = np.random.default_rng(self._seed)
        if self._action_space is not None:
            self._action_space.seed(self._seed)

    def reset(self) -> np.ndarray:
        if self._game is None:
            self._game = self._build()
        seed = None
        if self._seed is not None and (self._seed_pending or not self._dynamic_seed):
            seed = self._seed
            self._seed_pending = False
            if not self._dynamic_seed:
                self._game.rng = np.random.default_rng(self._seed)
        self._episode_return = 0.0
        return self._game.reset(seed)

    def step(self, action: Any) -> BaseEnvTimestep:
        if self._game is None:
            raise EnvError("AtariEnv.step: call reset() first")
        a = int(np.asarray(action).reshape(-1)[0]) if not isinstance(action, (int, np.integer)) else int(action)
        if not 0 <= a < self._action_space.n:
            raise EnvError(f"AtariEnv.step: action {a} is outside this game's {self._action_space.n} actions "
                           f"({self._cfg['env_id']}); check policy.model.action_shape")
        obs, reward, done, info = self._game.step(a)
        self._episode_return += reward
        if done:
            info["eval_episode_return"] = self._episode_return
        return BaseEnvTimestep(obs, np.array([reward], dtype=np.float32), done, info)

    def __getstate__(self) -> dict[str, Any]:
        """Picklable for exact resume: the emulator's state (RNG included) and the preprocessing's frames instead of
        the emulator itself, which is rebuilt from the ROM on unpickling."""
        state = {k: v for k, v in self.__dict__.items() if k not in ("_emu", "_game")}
        if self._game is not None and self._emu is not None:
            state["_saved_game"] = (self._emu.get_state(), self._game.state())
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        saved = state.pop("_saved_game", None)
        self.__dict__.update(state)
        self._emu, self._game = None, None
        if saved is not None:
            self._game = self._build()
            assert self._emu is not None
            self._emu.set_state(saved[0])
            self._game.load_state(saved[1])

    def close(self) -> None:
        if self._emu is not None:
            self._emu.close()
        self._emu, self._game = None, None

    @property
    def observation_space(self) -> Any:
        if self._observation_space is None:
            import gymnasium as gym

            return gym.spaces.Box(0, 255, (int(self._cfg["frame_stack"]), 84, 84), np.uint8)
        return self._observation_space

    @property
    def action_space(self) -> Any:
        if self._action_space is None:
            self._game = self._build()  # the action count comes from the ROM
        return self._action_space

    def random_action(self) -> np.ndarray:
        return np.array([self.action_space.sample()], dtype=np.int64)

    def __repr__(self) -> str:
        return f"AtariEnv({self._cfg['env_id']}, {'train' if self._cfg['is_train'] else 'eval'})"

    @staticmethod
    def create_collector_env_cfg(cfg: dict) -> list[dict]:
        """Training envs: lives end episodes, rewards clipped."""
        return _env_cfgs(cfg, True, int(cfg.get("collector_env_num", 1)))

    @staticmethod
    def create_evaluator_env_cfg(cfg: dict) -> list[dict]:
        """Evaluation envs: full games, the game's own (unclipped) rewards."""
        return _env_cfgs(cfg, False, int(cfg.get("evaluator_env_num", 1)))


def _env_cfgs(cfg: dict, is_train: bool, n: int) -> list[dict]:
    """``n`` env configs with ``is_train`` set; a DI-engine id is resolved here, once, in the process that makes the
    configs (its notice line printed there), so the env processes get ale-py's id and stay quiet."""
    out = copy.deepcopy(dict(cfg))
    ale_id, sticky = resolve_atari_id(out.get("env_id", AtariEnv.config["env_id"]))
    out["env_id"] = ale_id
    if out.get("repeat_action_probability") is None:
        out["repeat_action_probability"] = sticky
    out["is_train"] = is_train
    return [copy.deepcopy(out) for _ in range(n)]
