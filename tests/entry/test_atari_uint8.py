"""Atari frames stay uint8 from the env through the replay buffer and the parallel data files, and become float in
[0, 1] only where the learner's network reads them; obs and next_obs of consecutive transitions share one array."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

import ding
from ding.torch_utils import decode, encode
from ding.worker.replay_buffer.frame_sharing import FrameStack

pytestmark = pytest.mark.skipif(importlib.util.find_spec("ale_py") is None,
                                reason="ale-py is not installed (pip install -e '.[atari]')")


def _pong_dqn(tmp_path: object) -> tuple[dict, dict]:
    main = dict(
        exp_name=str(tmp_path) + "/pong_uint8",
        env=dict(collector_env_num=2, evaluator_env_num=1, n_evaluator_episode=1, stop_value=20,
                 env_id="PongNoFrameskip-v4", frame_stack=4, max_episode_frames=400),  # short games: a fast test
        policy=dict(
            cuda=False, priority=False,
            model=dict(obs_shape=[4, 84, 84], action_shape=6, encoder_hidden_size_list=[8, 8, 32]),
            nstep=1, discount_factor=0.99,
            learn=dict(update_per_collect=1, batch_size=8, learning_rate=1e-4, target_update_freq=100),
            collect=dict(n_sample=16),
            eval=dict(evaluator=dict(eval_freq=10**6)),
            other=dict(eps=dict(type="exp", start=1.0, end=0.05, decay=1000),
                       replay_buffer=dict(replay_buffer_size=1000)),
        ),
    )
    create = dict(env=dict(type="atari", import_names=["dizoo.atari.envs.atari_env"]),
                  env_manager=dict(type="base"), policy=dict(type="dqn"))
    return main, create


def test_buffer_holds_uint8_frames_once_and_the_learner_reads_float(tmp_path: object) -> None:
    seen: list[tuple[torch.dtype, float]] = []
    with ding.Trainer(_pong_dqn(tmp_path), max_train_iter=4) as trainer:
        encoder = trainer.policy.learn_mode.get_attribute("model").encoder
        encoder.register_forward_pre_hook(lambda _m, args: seen.append((args[0].dtype, float(args[0].max()))))
        trainer.run()
        items = [x for x in trainer._run.buffer._storage.data if x is not None]
        collected = trainer._run.collector.collect(n_sample=16, train_iter=0, policy_kwargs={"eps": 1.0})
    assert len(items) >= 32
    for item in items:  # stored as records of single frames (frame_sharing.py)
        for key in ("obs", "next_obs"):
            assert isinstance(item[key], FrameStack) and item[key].shape == (4, 84, 84)
    # consecutive transitions of one env: the next_obs of one is the very record that is the obs of the next
    shared = sum(a["next_obs"] is b["obs"] for a, b in zip(items, items[1:]))
    assert shared > 0
    # the learner's network got float32 in [0, 1] (Pong's screens are not black: a max of 0 would mean no frame)
    assert seen and all(dtype == torch.float32 and 0 < top <= 1.0 for dtype, top in seen)

    # the parallel data file (the collector's samples) keeps uint8 and writes a shared array once; decoding keeps it
    for item in collected:
        assert isinstance(item["obs"], np.ndarray) and item["obs"].dtype == np.uint8
    blob = encode(collected[:8], compress=False)
    back = decode(blob)
    assert back[0]["obs"].dtype == np.uint8 and np.array_equal(back[3]["obs"], collected[3]["obs"])
    pairs = [i for i in range(7) if collected[i]["next_obs"] is collected[i + 1]["obs"]]
    assert all(back[i]["next_obs"] is back[i + 1]["obs"] for i in pairs)
    assert len(blob) < 8 * 28224 * 1.6 + 4096 or not pairs


@pytest.mark.parametrize("buffer_type", ["naive", "advanced"])
def test_sampled_stacks_equal_the_envs_stacks_across_episode_ends(tmp_path: object, buffer_type: str) -> None:
    """Each frame is stored once; what comes out of the buffer is exactly what the envs gave (values, dtype, shape,
    order oldest -> newest), also for the transitions that end an episode and the first ones of the next."""
    from ding.worker.replay_buffer import create_buffer

    with ding.Trainer(_pong_dqn(tmp_path), max_train_iter=1) as trainer:
        collected = trainer._run.collector.collect(n_sample=640, train_iter=0, policy_kwargs={"eps": 1.0})
    buffer = create_buffer(dict(type=buffer_type, replay_buffer_size=10_000), instance_name="frames")
    expected = []
    for i, item in enumerate(collected):
        expected.append({k: item[k].copy() for k in ("obs", "next_obs")})
        item["idx"] = i
    for start in range(0, len(collected), 64):  # pushed in pieces, as a pipeline pushes each collect call's samples
        buffer.push(collected[start:start + 64], 0)
    n = len(collected)
    stored = {id(f) for x in buffer._storage.data if x is not None for k in ("obs", "next_obs") for f in x[k].frames}
    assert len(stored) < 1.25 * n  # ~one new frame per transition (plus each episode's first stack), not 4 or 8
    sampled = sorted(buffer.sample(n, 0) if buffer_type == "advanced" else buffer.sample(n, 0, replace=False),
                     key=lambda x: x["idx"])
    if buffer_type == "naive":  # without replacement: every item once
        assert [x["idx"] for x in sampled] == list(range(n))
    ends = 0
    for x in sampled:
        want = expected[x["idx"]]
        for k in ("obs", "next_obs"):
            got = x[k]
            assert type(got) is np.ndarray and got.dtype == np.uint8 and got.shape == (4, 84, 84)
            assert got.flags.writeable and np.array_equal(got, want[k]), (x["idx"], k)
        if x["done"] or x.get("truncated"):
            ends += 1
    assert ends >= 2  # episodes ended (time limit: max_episode_frames=400) inside the sample
    buffer.close()
