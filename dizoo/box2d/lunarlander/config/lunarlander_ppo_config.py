"""LunarLander PPO (discrete actions). Needs box2d: ``pip install -e '.[box2d]'``. Stop value 200.

Run: ``ding -m serial_onpolicy -c config/serial/lunarlander_ppo.py -s 0``
or ``python -m dizoo.box2d.lunarlander.config.lunarlander_ppo_config``.
"""
from easydict import EasyDict

lunarlander_ppo_config = dict(
    exp_name='lunarlander_ppo_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=200,
    ),
    policy=dict(
        cuda=False,
        action_space='discrete',
        model=dict(
            obs_shape=8,
            action_shape=4,
            action_space='discrete',
            encoder_hidden_size_list=[128, 128],
            actor_head_hidden_size=128,
            critic_head_hidden_size=128,
        ),
        learn=dict(
            epoch_per_collect=4,
            batch_size=64,
            learning_rate=5e-4,
            value_weight=0.5,
            entropy_weight=0.01,
            clip_ratio=0.2,
        ),
        collect=dict(
            n_sample=2048,
            unroll_len=1,
            discount_factor=0.99,
            gae_lambda=0.95,
        ),
        # 128 iterations per collect: evaluate every 8 collects (16,384 env steps)
        eval=dict(evaluator=dict(eval_freq=1024)),
    ),
)
lunarlander_ppo_config = EasyDict(lunarlander_ppo_config)
main_config = lunarlander_ppo_config

lunarlander_ppo_create_config = dict(
    env=dict(
        type='lunarlander',
        import_names=['dizoo.box2d.lunarlander.envs.lunarlander_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='ppo'),
)
lunarlander_ppo_create_config = EasyDict(lunarlander_ppo_create_config)
create_config = lunarlander_ppo_create_config

if __name__ == "__main__":
    from ding.entry import serial_pipeline_onpolicy

    serial_pipeline_onpolicy((main_config, create_config), seed=0)
