"""LunarLander DQN: double dueling DQN with 3-step returns. Needs box2d: ``pip install -e '.[box2d]'``.

Run: ``ding -m serial -c config/serial/lunarlander_dqn.py -s 0``
or ``python -m dizoo.box2d.lunarlander.config.lunarlander_dqn_config``.
"""
from easydict import EasyDict

lunarlander_dqn_config = dict(
    exp_name='lunarlander_dqn_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=8,
        n_evaluator_episode=8,
        stop_value=200,
    ),
    policy=dict(
        cuda=False,
        model=dict(
            obs_shape=8,
            action_shape=4,
            encoder_hidden_size_list=[256, 256],
            dueling=True,
        ),
        nstep=3,
        discount_factor=0.99,
        learn=dict(
            update_per_collect=16,
            batch_size=128,
            learning_rate=0.0005,
            target_update_freq=250,
        ),
        collect=dict(n_sample=64, unroll_len=1),
        eval=dict(evaluator=dict(eval_freq=1000)),
        other=dict(
            eps=dict(
                type='exp',
                start=1.0,
                end=0.05,
                decay=20000,
            ),
            replay_buffer=dict(replay_buffer_size=100000),
        ),
    ),
)
lunarlander_dqn_config = EasyDict(lunarlander_dqn_config)
main_config = lunarlander_dqn_config

lunarlander_dqn_create_config = dict(
    env=dict(
        type='lunarlander',
        import_names=['dizoo.box2d.lunarlander.envs.lunarlander_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='dqn'),
    replay_buffer=dict(type='deque'),
)
lunarlander_dqn_create_config = EasyDict(lunarlander_dqn_create_config)
create_config = lunarlander_dqn_create_config

if __name__ == "__main__":
    from ding.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
