"""The DeepMind Atari preprocessing (dizoo/atari), against known properties.

The exact properties (max-pooling of the last two frames, stack order, episodic life, clipping) are checked on a
scripted emulator whose screens and rewards the test chooses; the real-game tests need ale-py (the ``[atari]`` extra,
which the test extra installs) and are skipped with that reason only where it is missing.
"""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from ding.utils import EnvError
from dizoo.atari.envs.atari_env import AtariEnv, resolve_atari_id
from dizoo.atari.envs.atari_wrappers import AreaResize, DeepMindPreprocessing, area_weights

needs_ale = pytest.mark.skipif(importlib.util.find_spec("ale_py") is None,
                               reason="ale-py is not installed (pip install -e '.[atari]')")


class ScriptedEmulator:
    """Frame ``t`` (counted over the whole game) shows the uniform value ``screen_value(t)``; every ``life_every``
    frames a life is lost; rewards are ``reward_per_frame`` each frame; the game ends after ``game_frames``."""

    screen_shape = (210, 160)

    def __init__(self, n_actions: int = 4, needs_fire: bool = False, lives: int = 3, life_every: int = 10**9,
                 game_frames: int = 10**9, reward_per_frame: float = 0.0) -> None:
        self.n_actions, self.needs_fire = n_actions, needs_fire
        self.start_lives, self.life_every, self.game_frames = lives, life_every, game_frames
        self.reward_per_frame = reward_per_frame
        self.frame = 0
        self.actions: list[int] = []
        self.games = 0

    @staticmethod
    def screen_value(t: int) -> int:
        return (37 * t) % 251  # not monotonic in t, so a "max" that read the wrong frames shows

    def act(self, action: int) -> float:
        self.actions.append(action)
        self.frame += 1
        return self.reward_per_frame

    def screen_grayscale(self, out: np.ndarray) -> None:
        out[...] = self.screen_value(self.frame)

    def lives(self) -> int:
        return max(self.start_lives - self.frame // self.life_every, 0)

    def game_over(self) -> bool:
        return self.frame >= self.game_frames or self.lives() == 0

    def truncated(self) -> bool:
        return False

    def new_game(self, seed: int | None) -> None:
        self.frame, self.games = 0, self.games + 1
        self.actions.clear()


def test_area_resize_matches_the_dense_area_average_and_keeps_constants() -> None:
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (210, 160)).astype(np.uint8)
    dense = area_weights(210, 84).astype(np.float64) @ img @ area_weights(160, 84).T.astype(np.float64)
    out = AreaResize((210, 160))(img)
    assert out.shape == (84, 84) and out.dtype == np.uint8
    assert np.abs(out.astype(int) - np.rint(dense).astype(int)).max() <= 1  # float32 rounding at .5 only
    flat = np.full((210, 160), 173, np.uint8)
    assert (AreaResize((210, 160))(flat) == 173).all()


def test_frame_skip_max_pools_the_last_two_frames_and_sums_rewards() -> None:
    emu = ScriptedEmulator(reward_per_frame=1.0)
    game = DeepMindPreprocessing(emu, frame_skip=4, frame_stack=4, noop_max=0)
    game.reset()
    start = emu.frame
    obs, reward, done, _ = game.step(3)
    assert emu.actions[-4:] == [3, 3, 3, 3] and emu.frame == start + 4
    assert reward == 4.0 and not done
    v = ScriptedEmulator.screen_value
    expected = max(v(start + 3), v(start + 4))  # the screens after frames 3 and 4 of the step
    assert (obs[-1] == expected).all()
    # and not the max over more frames: pick a step where an earlier frame is brighter than both of the last two
    for _ in range(30):
        s = emu.frame
        obs, *_ = game.step(0)
        last_two = max(v(s + 3), v(s + 4))
        assert (obs[-1] == last_two).all()
        if max(v(s + 1), v(s + 2)) > last_two:
            break
    else:
        pytest.fail("the scripted screens never had a brighter early frame; the check above proved nothing")


def test_stack_is_oldest_to_newest_uint8_and_a_new_array_each_step() -> None:
    emu = ScriptedEmulator()
    game = DeepMindPreprocessing(emu, frame_skip=4, frame_stack=4, noop_max=0)
    first = game.reset()
    assert first.shape == (4, 84, 84) and first.dtype == np.uint8
    assert all((first[i] == first[0]).all() for i in range(4))  # a new game repeats its first frame
    newest = []
    obs = first
    for _ in range(5):
        s = emu.frame
        obs = game.step(1)[0]
        v = ScriptedEmulator.screen_value
        newest.append(max(v(s + 3), v(s + 4)))
    assert [int(obs[i, 0, 0]) for i in range(4)] == newest[-4:]  # obs[0] oldest ... obs[-1] newest
    assert not np.shares_memory(obs, game.step(1)[0])


def test_episodic_life_ends_episodes_on_a_lost_life_only_in_training() -> None:
    train = DeepMindPreprocessing(ScriptedEmulator(lives=3, life_every=20), noop_max=0, episodic_life=True)
    train.reset()
    steps = 0
    while True:
        _, _, done, info = train.step(0)
        steps += 1
        if done:
            break
    assert info.get("life_lost") and info["lives"] == 2 and steps == 5  # 20 frames / 4 per step
    games_before = train.emu.games
    train.reset()  # the same game goes on with the next life
    assert train.emu.games == games_before and train.emu.lives() == 2

    evaluate = DeepMindPreprocessing(ScriptedEmulator(lives=3, life_every=20), noop_max=0, episodic_life=False)
    evaluate.reset()
    steps = 0
    done = False
    while not done:
        _, _, done, info = evaluate.step(0)
        steps += 1
    assert info["lives"] == 0 and steps == 15 and "life_lost" not in info  # the whole game: 3 lives x 5 steps


def test_rewards_are_clipped_only_when_asked() -> None:
    clipped = DeepMindPreprocessing(ScriptedEmulator(reward_per_frame=5.0), noop_max=0, clip_reward=True)
    clipped.reset()
    assert clipped.step(0)[1] == 1.0
    raw = DeepMindPreprocessing(ScriptedEmulator(reward_per_frame=5.0), noop_max=0, clip_reward=False)
    raw.reset()
    assert raw.step(0)[1] == 20.0


def test_noop_reset_and_fire_reset() -> None:
    emu = ScriptedEmulator(needs_fire=True)
    game = DeepMindPreprocessing(emu, noop_max=30, rng=np.random.default_rng(0))
    counts = set()
    for _ in range(20):
        game.reset()
        noops = len(emu.actions) - 8
        assert emu.actions[:noops] == [0] * noops and 1 <= noops <= 30
        assert emu.actions[noops:] == [1] * 4 + [2] * 4  # FIRE, then 2, each a frame-skipped step
        counts.add(noops)
    assert len(counts) > 5  # random, not a fixed count


def test_env_ids_accepted_and_rejected() -> None:
    assert resolve_atari_id("PongNoFrameskip-v4", notice=False) == ("ALE/Pong-v5", 0.0)
    assert resolve_atari_id("SpaceInvadersNoFrameskip-v4", notice=False) == ("ALE/SpaceInvaders-v5", 0.0)
    assert resolve_atari_id("ALE/Breakout-v5", notice=False) == ("ALE/Breakout-v5", 0.25)
    with pytest.raises(EnvError, match="PongNoFrameskip-v4"):
        AtariEnv(dict(env_id="Pong-v0"))


def test_collector_and_evaluator_configs_set_is_train() -> None:
    cfg = dict(env_id="PongNoFrameskip-v4", collector_env_num=3, evaluator_env_num=2, frame_stack=4)
    assert [c["is_train"] for c in AtariEnv.create_collector_env_cfg(cfg)] == [True] * 3
    evaluators = AtariEnv.create_evaluator_env_cfg(cfg)
    assert [c["is_train"] for c in evaluators] == [False] * 2
    assert evaluators[0]["env_id"] == "ALE/Pong-v5" and evaluators[0]["repeat_action_probability"] == 0.0


@needs_ale
def test_pong_obs_uint8_and_eval_returns_unclipped() -> None:
    env = AtariEnv(dict(env_id="PongNoFrameskip-v4", is_train=True))
    env.seed(0)
    obs = env.reset()
    assert obs.shape == (4, 84, 84) and obs.dtype == np.uint8 and env.observation_space.contains(obs)
    assert env.action_space.n == 6
    env.close()
    # Boxing scores several points per punch: an evaluator env's (unclipped) return is not a count of reward steps
    ev = AtariEnv(dict(env_id="BoxingNoFrameskip-v4", is_train=False, noop_max=0))
    ev.seed(0, dynamic_seed=False)
    ev.reset()
    rng = np.random.default_rng(0)
    rewards = []
    for _ in range(300):
        ts = ev.step(np.array([rng.integers(ev.action_space.n)]))
        rewards.append(float(ts.reward[0]))
        if ts.done:
            break
    ev.close()
    assert any(abs(r) > 1 for r in rewards), "no reward above 1 in 300 Boxing steps: the eval rewards look clipped"


@needs_ale
def test_breakout_training_env_ends_on_a_life_evaluation_env_does_not() -> None:
    def play(is_train: bool) -> tuple[int, dict]:
        env = AtariEnv(dict(env_id="BreakoutNoFrameskip-v4", is_train=is_train, noop_max=0))
        env.seed(0, dynamic_seed=False)
        env.reset()
        for t in range(2000):
            ts = env.step(np.array([1]))  # FIRE, never move: each ball is launched and lost
            if ts.done:
                env.close()
                return t, ts.info
        env.close()
        raise AssertionError("Breakout never ended")

    t_train, info_train = play(True)
    t_eval, info_eval = play(False)
    assert info_train["life_lost"] and info_train["lives"] == 4
    assert info_eval["lives"] == 0 and t_eval > t_train


@needs_ale
def test_a_pickled_env_continues_exactly() -> None:
    import pickle

    env = AtariEnv(dict(env_id="PongNoFrameskip-v4", is_train=True))
    env.seed(3)
    env.reset()
    for a in range(40):
        env.step(np.array([a % 6]))
    copy = pickle.loads(pickle.dumps(env))
    for a in range(60):
        x, y = env.step(np.array([(a * 7) % 6])), copy.step(np.array([(a * 7) % 6]))
        assert np.array_equal(x.obs, y.obs) and x.reward[0] == y.reward[0] and x.done == y.done
    env.close()
    copy.close()


@pytest.mark.parametrize("frame_skip", [1, 2, 3, 4])
def test_every_frame_skip_shows_the_newest_screens_max_pooled(frame_skip: int) -> None:
    """frame_skip=1 once froze the observation at the reset screen (written to one buffer, read from the other)."""
    v = ScriptedEmulator.screen_value
    emu = ScriptedEmulator(reward_per_frame=1.0)
    game = DeepMindPreprocessing(emu, frame_skip=frame_skip, frame_stack=4, noop_max=0)
    game.reset()
    seen = set()
    for _ in range(12):
        s = emu.frame
        obs, reward, done, _ = game.step(1)
        assert emu.frame == s + frame_skip and reward == float(frame_skip) and not done
        expected = v(s + 1) if frame_skip == 1 else max(v(s + frame_skip - 1), v(s + frame_skip))
        assert (obs[-1] == expected).all(), (frame_skip, int(obs[-1, 0, 0]), expected)
        seen.add(int(obs[-1, 0, 0]))
    assert len(seen) > 1  # the screen moves


@pytest.mark.parametrize("frame_skip", [1, 2, 3, 4])
def test_every_frame_skip_pools_what_was_drawn_when_the_game_ends_mid_step(frame_skip: int) -> None:
    v = ScriptedEmulator.screen_value
    for end in range(1, frame_skip + 1):  # the game ends on frame `end` of the step
        emu = ScriptedEmulator(game_frames=10**9)
        game = DeepMindPreprocessing(emu, frame_skip=frame_skip, frame_stack=2, noop_max=0)
        game.reset()
        emu.game_frames = emu.frame + end
        s = emu.frame
        obs, _, done, _ = game.step(0)
        assert done and emu.frame == s + end
        full = end == frame_skip and frame_skip > 1  # a whole step: its last two screens; else the last drawn
        expected = max(v(s + end - 1), v(s + end)) if full else v(s + end)
        assert (obs[-1] == expected).all(), (frame_skip, end)
