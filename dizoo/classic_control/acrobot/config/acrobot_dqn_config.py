"""Acrobot DQN: double dueling DQN with 3-step returns.

Run: ``ding -m serial -c config/serial/acrobot_dqn.py -s 0``
or ``python -m dizoo.classic_control.acrobot.config.acrobot_dqn_config``.
"""
from easydict import EasyDict

acrobot_dqn_config = dict(
    exp_name='acrobot_dqn_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=-100,
    ),
    policy=dict(
        cuda=False,
        model=dict(
            obs_shape=6,
            action_shape=3,
            encoder_hidden_size_list=[128, 128],
            dueling=True,
        ),
        nstep=3,
        discount_factor=0.99,
        learn=dict(
            update_per_collect=8,
            batch_size=128,
            learning_rate=0.0005,
            target_update_freq=100,
        ),
        collect=dict(n_sample=64, unroll_len=1),
        eval=dict(evaluator=dict(eval_freq=80)),
        other=dict(
            eps=dict(
                type='exp',
                start=1.0,
                end=0.1,
                decay=10000,
            ),
            replay_buffer=dict(replay_buffer_size=50000),
        ),
    ),
)
acrobot_dqn_config = EasyDict(acrobot_dqn_config)
main_config = acrobot_dqn_config

acrobot_dqn_create_config = dict(
    env=dict(type='acrobot', import_names=['dizoo.classic_control.acrobot.envs.acrobot_env']),
    env_manager=dict(type='base'),
    policy=dict(type='dqn'),
    replay_buffer=dict(type='deque'),
)
acrobot_dqn_create_config = EasyDict(acrobot_dqn_create_config)
create_config = acrobot_dqn_create_config

if __name__ == "__main__":
    from ding.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
