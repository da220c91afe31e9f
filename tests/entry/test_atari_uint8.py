"""Atari frames stay uint8 from the env through the replay buffer and the parallel data files, and become float in
[0, 1] only where the learner's network reads them; obs and next_obs of consecutive transitions share one array."""
from __future__ import annotations

import importlib.util

import numpy as np
import pytest
import torch

import ding
from ding.torch_utils import decode, encode

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
    assert len(items) >= 32
    for item in items:
        for key in ("obs", "next_obs"):
            assert isinstance(item[key], np.ndarray) and item[key].dtype == np.uint8 and item[key].shape == (4, 84, 84)
    # consecutive transitions of one env: the next_obs of one is the very array that is the obs of the next
    shared = sum(a["next_obs"] is b["obs"] for a, b in zip(items, items[1:]))
    distinct = {id(x[k]) for x in items for k in ("obs", "next_obs")}
    assert shared > 0 and len(distinct) < 1.6 * len(items), (shared, len(distinct), len(items))
    # the learner's network got float32 in [0, 1] (Pong's screens are not black: a max of 0 would mean no frame)
    assert seen and all(dtype == torch.float32 and 0 < top <= 1.0 for dtype, top in seen)

    # the parallel data file keeps uint8 and writes a shared array once; decoding keeps it shared
    blob = encode(items[:8], compress=False)
    back = decode(blob)
    assert back[0]["obs"].dtype == np.uint8 and np.array_equal(back[3]["obs"], items[3]["obs"])
    pairs = [i for i in range(7) if items[i]["next_obs"] is items[i + 1]["obs"]]
    assert all(back[i]["next_obs"] is back[i + 1]["obs"] for i in pairs)
    assert len(blob) < 8 * 28224 * 1.6 + 4096 or not pairs
