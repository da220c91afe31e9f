"""Pendulum TD3: reaches the stop value (-250, mean of 5 eval episodes) in ~2-4k env steps.

Run: ``ding -m serial -c config/serial/pendulum_td3.py -s 0``
or ``python -m dizoo.classic_control.pendulum.config.pendulum_td3_config``.
"""
from easydict import EasyDict

pendulum_td3_config = dict(
    exp_name='pendulum_td3_seed0',
    env=dict(
        collector_env_num=1,
        evaluator_env_num=5,
        # The policy acts in [-1, 1]; the env maps that onto Pendulum's torque range [-2, 2].
        act_scale=True,
        n_evaluator_episode=5,
        stop_value=-250,
    ),
    policy=dict(
        cuda=False,
        # Env steps of uniformly random actions before training (fills the buffer with varied swings).
        random_collect_size=500,
        # 3-step returns: about half the env steps of 1-step TD here.
        nstep=3,
        model=dict(
            obs_shape=3,
            action_shape=1,
            twin_critic=True,
            action_space='regression',
            actor_head_hidden_size=128,
            critic_head_hidden_size=128,
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=128,
            learning_rate_actor=1e-3,
            learning_rate_critic=1e-3,
            target_theta=0.01,
            discount_factor=0.99,
            actor_update_freq=2,
            noise=True,
            noise_sigma=0.1,
            noise_range=dict(min=-0.5, max=0.5),
        ),
        collect=dict(n_sample=1, noise_sigma=0.1),
        eval=dict(evaluator=dict(eval_freq=100)),
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
pendulum_td3_config = EasyDict(pendulum_td3_config)
main_config = pendulum_td3_config

pendulum_td3_create_config = dict(
    env=dict(
        type='pendulum',
        import_names=['dizoo.classic_control.pendulum.envs.pendulum_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='td3'),
    replay_buffer=dict(type='naive'),
)
pendulum_td3_create_config = EasyDict(pendulum_td3_create_config)
create_config = pendulum_td3_create_config

if __name__ == "__main__":
    from ding.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
