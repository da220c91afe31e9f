"""The DeepMind Atari preprocessing, written against a small emulator interface so it can be tested without ROMs.

One agent step (:meth:`DeepMindPreprocessing.step`) repeats the action for ``frame_skip`` emulator frames, sums the
rewards, and takes the pixel-wise maximum of the last two grayscale screens (Atari games draw some sprites only every
other frame). The maximum is resized to 84x84 with area averaging and pushed onto a stack of the last ``frame_stack``
frames, oldest first: ``obs[-1]`` is the newest frame. Observations are uint8 ``(frame_stack, 84, 84)`` arrays, a new
array every step (never a view of a buffer that is written again).

A new game starts with a random number (0..``noop_max``) of no-op frames and, in games that need it, FIRE then the
action 2 to launch the ball. With ``episodic_life`` (training only), losing a life ends the episode for the learner
(``done``) while the game goes on: the next ``reset`` continues it with one no-op step instead of starting a new
game. With ``clip_reward`` (training only) a step's reward is its sign. Evaluation sets both off: full games,
unclipped returns.

The emulator is anything with ``act(action_index) -> reward``, ``screen_grayscale(out)`` (fills a ``(H, W)`` uint8
array), ``lives()``, ``game_over()``, ``truncated()``, ``new_game(seed)``; :class:`AleEmulator` adapts ale-py.
"""
from __future__ import annotations

from collections import deque
from typing import Any, Protocol

import numpy as np

SCREEN_SIZE = 84


class Emulator(Protocol):
    screen_shape: tuple[int, int]
    n_actions: int
    needs_fire: bool

    def act(self, action: int) -> float: ...

    def screen_grayscale(self, out: np.ndarray) -> None: ...

    def lives(self) -> int: ...

    def game_over(self) -> bool: ...

    def truncated(self) -> bool: ...

    def new_game(self, seed: int | None) -> None: ...


def area_weights(n_in: int, n_out: int) -> np.ndarray:
    """``(n_out, n_in)`` float32 matrix averaging the input cells each output cell covers (area interpolation): output
    cell ``i`` spans input coordinates ``[i * n_in / n_out, (i + 1) * n_in / n_out)``; rows sum to 1."""
    scale = n_in / n_out
    w = np.zeros((n_out, n_in), dtype=np.float64)
    for i in range(n_out):
        lo, hi = i * scale, (i + 1) * scale
        for j in range(int(np.floor(lo)), min(int(np.ceil(hi)), n_in)):
            w[i, j] = min(hi, j + 1) - max(lo, j)
    w /= w.sum(axis=1, keepdims=True)
    return w.astype(np.float32)


class AreaResize:
    """Resize ``(H, W)`` uint8 images to ``(out_h, out_w)`` by area averaging, rounded.

    Each output row mixes at most a few input rows (and each column a few columns), so the resize is a handful of
    gathers and multiply-adds on small arrays; no BLAS call, whose thread pool stalls on a busy machine.
    """

    def __init__(self, in_shape: tuple[int, int], out_shape: tuple[int, int] = (SCREEN_SIZE, SCREEN_SIZE)) -> None:
        self.row_idx, self.row_w = self._bands(area_weights(in_shape[0], out_shape[0]))
        self.col_idx, self.col_w = self._bands(area_weights(in_shape[1], out_shape[1]))

    @staticmethod
    def _bands(w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The nonzero entries of each row of ``w`` as ``(k, n_out)`` index and weight arrays (padded with 0s)."""
        k = int((w > 0).sum(axis=1).max())
        idx = np.zeros((k, w.shape[0]), dtype=np.intp)
        wt = np.zeros((k, w.shape[0]), dtype=np.float32)
        for i, row in enumerate(w):
            nz = np.flatnonzero(row)
            idx[:len(nz), i], wt[:len(nz), i] = nz, row[nz]
        return idx, wt

    def __call__(self, img: np.ndarray) -> np.ndarray:
        src = img.astype(np.float32)
        rows = self.row_w[0][:, None] * src[self.row_idx[0]]
        for idx, w in zip(self.row_idx[1:], self.row_w[1:]):
            rows += w[:, None] * src[idx]
        out = self.col_w[0] * rows[:, self.col_idx[0]]
        for idx, w in zip(self.col_idx[1:], self.col_w[1:]):
            out += w * rows[:, idx]
        return np.rint(out, out=out).clip(0, 255).astype(np.uint8)


class DeepMindPreprocessing:
    """The preprocessing of one Atari game (see the module docstring). ``reset() -> obs``, ``step(a) -> (obs,
    reward, done, info)``; ``info['lives']``, ``info['truncated']`` (the emulator's frame limit ended the game) and,
    with ``episodic_life``, ``info['life_lost']``."""

    def __init__(self, emulator: Emulator, frame_skip: int = 4, frame_stack: int = 4, noop_max: int = 30,
                 episodic_life: bool = False, clip_reward: bool = False, fire_reset: bool = True,
                 rng: np.random.Generator | None = None) -> None:
        if frame_skip < 1 or frame_stack < 1 or noop_max < 0:
            raise ValueError(f"DeepMindPreprocessing: frame_skip ({frame_skip}) and frame_stack ({frame_stack}) must "
                             f"be >= 1 and noop_max ({noop_max}) >= 0")
        self.emu = emulator
        self.frame_skip, self.noop_max = int(frame_skip), int(noop_max)
        self.episodic_life, self.clip_reward = bool(episodic_life), bool(clip_reward)
        self.fire_reset = bool(fire_reset) and emulator.needs_fire
        self.rng = rng if rng is not None else np.random.default_rng()
        h, w = emulator.screen_shape
        self._screens = np.zeros((2, h, w), dtype=np.uint8)  # the last two screens of a step, max-pooled
        self._resize = AreaResize((h, w))
        self._frames: deque[np.ndarray] = deque(maxlen=int(frame_stack))
        self._lives = 0
        self._life_lost = False  # episodic life: the last episode ended on a lost life, the game goes on

    # ---- one frame-skipped step -----------------------------------------------------------------------------------
    def _skip(self, action: int) -> tuple[np.ndarray, float]:
        """Repeat ``action`` for ``frame_skip`` frames (fewer when the game ends); the max of the last two screens,
        resized, and the summed reward."""
        total = 0.0
        n = self.frame_skip
        first_kept = max(n - 2, 0)  # the frame whose screen goes to _screens[0] (frame_skip=1: the only one)
        for i in range(n):
            total += self.emu.act(action)
            if i >= first_kept:
                self.emu.screen_grayscale(self._screens[i - first_kept])
            if self.emu.game_over():  # the game ended early: pool what was drawn up to its last frame
                if i < n - 2:
                    self.emu.screen_grayscale(self._screens[1])
                    self._screens[0] = self._screens[1]
                elif i == n - 2:
                    self._screens[1] = self._screens[0]
                break
        frame = self._resize(np.maximum(self._screens[0], self._screens[1]) if n > 1 else self._screens[0])
        return frame, total

    def _observation(self) -> np.ndarray:
        return np.stack(self._frames)  # a fresh array, oldest frame first

    def _start_frames(self, frame: np.ndarray) -> np.ndarray:
        self._frames.clear()
        self._frames.extend([frame] * self._frames.maxlen)  # type: ignore[operator]
        return self._observation()

    # ---- episodes --------------------------------------------------------------------------------------------------
    def reset(self, seed: int | None = None) -> np.ndarray:
        if self._life_lost and not self.emu.game_over():
            self._life_lost = False
            frame, _ = self._skip(0)  # a new life of the same game: one no-op step
            if self.fire_reset and not self.emu.game_over():
                frame = self._fire()
            if not self.emu.game_over():
                self._lives = self.emu.lives()
                return self._start_frames(frame)
        self._life_lost = False
        return self._new_game(seed)

    def _new_game(self, seed: int | None) -> np.ndarray:
        self.emu.new_game(seed)
        for _ in range(int(self.rng.integers(1, self.noop_max + 1)) if self.noop_max > 0 else 0):
            self.emu.act(0)
            if self.emu.game_over():
                self.emu.new_game(None)
        self.emu.screen_grayscale(self._screens[0])
        self._screens[1] = self._screens[0]
        frame = self._resize(self._screens[0])
        if self.fire_reset:
            frame = self._fire()
            if self.emu.game_over():
                return self._new_game(None)
        self._lives = self.emu.lives()
        return self._start_frames(frame)

    def _fire(self) -> np.ndarray:
        """FIRE then action 2 (DeepMind's fire reset: the games that wait for FIRE also accept 2 to start); their
        rewards are not counted."""
        frame, _ = self._skip(1)
        if not self.emu.game_over():
            frame, _ = self._skip(2)
        return frame

    def state(self) -> dict[str, Any]:
        """What the preprocessing keeps between steps (not the emulator's state), for an exact resume."""
        return {"frames": [f.copy() for f in self._frames], "screens": self._screens.copy(), "lives": self._lives,
                "life_lost": self._life_lost, "rng": self.rng.bit_generator.state}

    def load_state(self, state: dict[str, Any]) -> None:
        self._frames.clear()
        self._frames.extend(state["frames"])
        self._screens[...] = state["screens"]
        self._lives, self._life_lost = int(state["lives"]), bool(state["life_lost"])
        self.rng.bit_generator.state = state["rng"]

    def step(self, action: int) -> tuple[np.ndarray, float, bool, dict[str, Any]]:
        frame, reward = self._skip(int(action))
        self._frames.append(frame)
        game_over = self.emu.game_over()
        lives = self.emu.lives()
        info: dict[str, Any] = {"lives": lives, "truncated": game_over and self.emu.truncated()}
        done = game_over
        if self.episodic_life and not game_over and 0 < lives < self._lives:
            done = True
            self._life_lost = True
            info["life_lost"] = True
        self._lives = lives
        if self.clip_reward:
            reward = float(np.sign(reward))
        return self._observation(), reward, done, info


class AleEmulator:
    """ale-py's ``ALEInterface`` through :class:`Emulator`: the game's minimal action set, grayscale screens read into
    a given buffer, and new games seeded through the gymnasium env (which reloads the ROM with that seed)."""

    def __init__(self, gym_env: Any) -> None:
        self.gym_env = gym_env
        base = gym_env.unwrapped
        self.ale = base.ale
        self.action_set = list(base._action_set)
        self.n_actions = len(self.action_set)
        h, w = self.ale.getScreenDims()
        self.screen_shape = (int(h), int(w))
        meanings = base.get_action_meanings()
        self.needs_fire = len(meanings) >= 3 and meanings[1] == "FIRE"
        if meanings[0] != "NOOP":
            raise RuntimeError(f"AleEmulator: action 0 of this game is {meanings[0]!r}, not NOOP; the no-op reset "
                               "needs NOOP as action 0")

    def act(self, action: int) -> float:
        return float(self.ale.act(self.action_set[action]))

    def screen_grayscale(self, out: np.ndarray) -> None:
        self.ale.getScreenGrayscale(out)

    def lives(self) -> int:
        return int(self.ale.lives())

    def game_over(self) -> bool:
        return bool(self.ale.game_over())

    def truncated(self) -> bool:
        return bool(self.ale.game_truncated())

    def new_game(self, seed: int | None) -> None:
        if seed is not None:
            self.gym_env.reset(seed=int(seed))  # reseeds the emulator and starts a game
        else:
            self.ale.reset_game()

    def get_state(self) -> Any:
        """The emulator's whole state, its RNG included (picklable), for :meth:`set_state`."""
        return self.ale.cloneState(include_rng=True)

    def set_state(self, state: Any) -> None:
        self.ale.restoreState(state)

    def close(self) -> None:
        self.gym_env.close()
