"""CartPole C51: distributional double DQN with 3-step returns and prioritized replay.

Run: ``ding -m serial -c config/serial/cartpole_c51.py -s 0``
or ``python -m dizoo.classic_control.cartpole.config.cartpole_c51_config``.
"""
from easydict import EasyDict

cartpole_c51_config = dict(
    exp_name='cartpole_c51_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=195,
    ),
    policy=dict(
        cuda=False,
        priority=True,  # each sample's cross-entropy is its priority
        priority_IS_weight=True,
        model=dict(
            obs_shape=4,
            action_shape=2,
            encoder_hidden_size_list=[128, 128, 64],
            # CartPole's discounted returns lie in [0, 1 / (1 - 0.97)] = [0, 33.3]
            v_min=0,
            v_max=40,
            n_atom=51,
        ),
        discount_factor=0.97,
        nstep=3,
        learn=dict(
            update_per_collect=5,
            batch_size=64,
            learning_rate=0.001,
            target_update_freq=100,
        ),
        collect=dict(n_sample=8, unroll_len=1),
        eval=dict(evaluator=dict(eval_freq=40)),
        other=dict(
            eps=dict(
                type='exp',
                start=0.95,
                end=0.1,
                decay=10000,
            ),
            replay_buffer=dict(replay_buffer_size=20000),
        ),
    ),
)
cartpole_c51_config = EasyDict(cartpole_c51_config)
main_config = cartpole_c51_config

cartpole_c51_create_config = dict(
    env=dict(
        type='cartpole',
        import_names=['dizoo.classic_control.cartpole.envs.cartpole_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='c51'),
    replay_buffer=dict(type='advanced'),
)
cartpole_c51_create_config = EasyDict(cartpole_c51_create_config)
create_config = cartpole_c51_create_config

if __name__ == "__main__":
    from ding.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
