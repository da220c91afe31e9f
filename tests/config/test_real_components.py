"""compile_config on the real components: the CartPole DQN config, by hand and in auto mode."""
from __future__ import annotations

import os
import textwrap

import pytest

from ding.config import compile_config, read_config
from ding.envs import BaseEnvManager
from ding.policy import DQNPolicy
from ding.utils import ConfigError, RegistryError
from ding.worker import BaseLearner, InteractionSerialEvaluator, NaiveReplayBuffer, SampleSerialCollector

CARTPOLE_DQN = textwrap.dedent("""
    from easydict import EasyDict

    cartpole_dqn_config = dict(
        exp_name='cartpole_dqn_seed0',
        env=dict(collector_env_num=8, evaluator_env_num=5, n_evaluator_episode=5, stop_value=195),
        policy=dict(
            cuda=False,
            model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[128, 128, 64], dueling=True),
            nstep=1,
            discount_factor=0.97,
            learn=dict(update_per_collect=5, batch_size=64, learning_rate=0.001,
                       learner=dict(hook=dict(save_ckpt_after_iter=1000))),
            collect=dict(n_sample=8),
            eval=dict(evaluator=dict(eval_freq=40)),
            other=dict(eps=dict(type='exp', start=0.95, end=0.1, decay=10000),
                       replay_buffer=dict(replay_buffer_size=20000)),
        ),
    )
    main_config = EasyDict(cartpole_dqn_config)
    create_config = EasyDict(dict(
        env=dict(type='cartpole', import_names=['dizoo.classic_control.cartpole.envs.cartpole_env']),
        env_manager=dict(type='base'),
        policy=dict(type='dqn'),
        replay_buffer=dict(type='deque'),
    ))
""")


@pytest.fixture
def cartpole_dqn(tmp_path):
    path = tmp_path / "cartpole_dqn.py"
    path.write_text(CARTPOLE_DQN)
    return str(path)


def test_cartpole_dqn_compiles_with_every_worker_default(cartpole_dqn):
    main, create = read_config(cartpole_dqn)
    cfg = compile_config(main, auto=True, create_cfg=create, save_cfg=False, source=cartpole_dqn)
    assert (cfg.env.type, cfg.env.manager.type, cfg.policy.type) == ("cartpole", "base", "dqn")
    assert cfg.policy.learn.learner.type == "base" and cfg.policy.learn.learner.hook.save_ckpt_after_iter == 1000
    assert cfg.policy.collect.collector.type == "sample"
    assert cfg.policy.eval.evaluator.type == "interaction"
    assert (cfg.policy.eval.evaluator.stop_value, cfg.policy.eval.evaluator.n_episode) == (195, 5)
    assert cfg.policy.other.replay_buffer.type == "deque" and cfg.policy.other.replay_buffer.replay_buffer_size == 20000
    assert cfg.policy.other.commander.type == "base"


def test_cartpole_dqn_typos_are_reported_with_file_and_suggestion(tmp_path):
    path = tmp_path / "cartpole_dqn_typo.py"
    path.write_text(CARTPOLE_DQN.replace("update_per_collect=5", "update_per_colect=5")
                    .replace("replay_buffer_size=20000", "replay_buffer_sise=20000")
                    .replace("eval_freq=40", "eval_freq='40'"))
    main, create = read_config(str(path))
    with pytest.raises(ConfigError) as info:
        compile_config(main, auto=True, create_cfg=create, save_cfg=False, source="cartpole_dqn_typo.py")
    lines = str(info.value).splitlines()
    assert lines == [
        "3 problems in the config:",
        "  policy.learn.update_per_colect: unknown key (in cartpole_dqn_typo.py); did you mean 'update_per_collect'?",
        "  policy.eval.evaluator.eval_freq: expected int, got str '40' (in cartpole_dqn_typo.py)",
        "  policy.other.replay_buffer.replay_buffer_sise: unknown key (in cartpole_dqn_typo.py); "
        "did you mean 'replay_buffer_size'?",
    ]


def test_unknown_policy_type_suggests_the_registered_one(cartpole_dqn):
    main, create = read_config(cartpole_dqn)
    create.policy.type = "dnq"
    with pytest.raises(RegistryError, match=r"create_config\.policy\.type \(in .*cartpole_dqn\.py\): unknown policy "
                                            r"type 'dnq'\. Did you mean 'dqn'\?.*Known policy types: .*dqn"):
        compile_config(main, auto=True, create_cfg=create, save_cfg=False, source=cartpole_dqn)


def test_by_hand_matches_auto_except_the_commander(cartpole_dqn):
    main, create = read_config(cartpole_dqn)
    from dizoo.classic_control.cartpole.envs.cartpole_env import CartPoleEnv

    by_hand = compile_config(main, BaseEnvManager, DQNPolicy, BaseLearner, SampleSerialCollector,
                             InteractionSerialEvaluator, NaiveReplayBuffer, CartPoleEnv, save_cfg=False,
                             create_cfg=create)
    auto = compile_config(main, auto=True, create_cfg=create, save_cfg=False)
    auto.policy.other.commander = {}
    assert by_hand == auto


def test_learner_hooks_and_model_kwargs_are_free_form(cartpole_dqn):
    main, create = read_config(cartpole_dqn)
    main.policy.learn.learner.hook.my_plugin = dict(type="my_hook", position="after_iter", priority=30)
    main.policy.model.head_hidden_size = 32
    cfg = compile_config(main, auto=True, create_cfg=create, save_cfg=False)
    assert cfg.policy.learn.learner.hook.my_plugin.position == "after_iter"


def test_round_trip_through_total_config(cartpole_dqn, in_tmp_dir):
    main, create = read_config(cartpole_dqn)
    first = compile_config(main, auto=True, create_cfg=create, seed=3, source=cartpole_dqn)
    for name in ("total_config.py", "formatted_total_config.py"):
        main2, create2 = read_config(os.path.join(first.exp_name, name))
        assert compile_config(main2, auto=True, create_cfg=create2, seed=3, save_cfg=False) == first
