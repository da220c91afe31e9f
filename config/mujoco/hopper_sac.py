"""Hopper-v5 SAC: DI-engine's hopper_sac_config values with two gradient steps per env step.

Needs the simulator: ``pip install -e '.[mujoco]'``.
Run: ``ding -m serial -c config/mujoco/hopper_sac.py -s 0`` (stops at the stop value 1,000 or after 100,000 env
steps). Measured (docs/benchmarks.md, "Two gradient steps per env step"): seeds 0, 1, 2 pass 1,000 at 35,000,
40,000 and 75,000 env steps, about 10-25 minutes of CPU each on a 2-core machine; ~35 minutes of CPU for the
whole 100,000-step budget.
"""
from easydict import EasyDict

hopper_sac_config = dict(
    exp_name='hopper_sac_seed0',
    env=dict(
        env_id='Hopper-v5',
        collector_env_num=1,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=1000,
    ),
    policy=dict(
        cuda=False,
        # Env steps of uniformly random actions before training.
        random_collect_size=10000,
        model=dict(
            obs_shape=11,
            action_shape=3,
            twin_critic=True,
            action_space='reparameterization',
            actor_head_hidden_size=256,
            critic_head_hidden_size=256,
        ),
        learn=dict(
            # Two gradient steps per env step (SB3's gradient_steps=2).
            update_per_collect=2,
            batch_size=256,
            learning_rate_q=1e-3,
            learning_rate_policy=1e-3,
            learning_rate_alpha=3e-4,
            target_theta=0.005,
            discount_factor=0.99,
            auto_alpha=False,
            alpha=0.2,
        ),
        collect=dict(n_sample=1),
        # Train iterations between evaluations: 2 per env step, so every 5,000 env steps.
        eval=dict(evaluator=dict(eval_freq=10000)),
        other=dict(replay_buffer=dict(replay_buffer_size=1000000)),
    ),
)
hopper_sac_config = EasyDict(hopper_sac_config)
main_config = hopper_sac_config

hopper_sac_create_config = dict(
    env=dict(
        type='mujoco',
        import_names=['dizoo.mujoco.envs.mujoco_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='sac'),
    replay_buffer=dict(type='naive'),
)
hopper_sac_create_config = EasyDict(hopper_sac_create_config)
create_config = hopper_sac_create_config

if __name__ == "__main__":
    from ding.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0, max_env_step=100000)
