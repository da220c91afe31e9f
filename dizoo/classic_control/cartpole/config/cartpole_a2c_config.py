"""CartPole A2C (discrete actions). Tuned for env steps and wall time to the stop value (195).

Run: ``ding -m serial_onpolicy -c config/serial/cartpole_a2c.py -s 0``
or ``python -m dizoo.classic_control.cartpole.config.cartpole_a2c_config``.
"""
from easydict import EasyDict

cartpole_a2c_config = dict(
    exp_name='cartpole_a2c_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=195,
    ),
    policy=dict(
        cuda=False,
        model=dict(
            obs_shape=4,
            action_shape=2,
            encoder_hidden_size_list=[64, 64],
        ),
        learn=dict(
            # one gradient step per collect: the whole rollout (8 envs x 5 steps) is one batch
            batch_size=40,
            # 3e-3 learns faster on most seeds but collapses on some (seed 3 never recovered)
            learning_rate=1e-3,
            value_weight=0.25,
            entropy_weight=0.01,
            adv_norm=False,
        ),
        collect=dict(
            n_sample=40,
            discount_factor=0.9,
            gae_lambda=0.95,
        ),
        eval=dict(evaluator=dict(eval_freq=50)),
    ),
)
cartpole_a2c_config = EasyDict(cartpole_a2c_config)
main_config = cartpole_a2c_config

cartpole_a2c_create_config = dict(
    env=dict(
        type='cartpole',
        import_names=['dizoo.classic_control.cartpole.envs.cartpole_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='a2c'),
)
cartpole_a2c_create_config = EasyDict(cartpole_a2c_create_config)
create_config = cartpole_a2c_create_config

if __name__ == "__main__":
    from ding.entry import serial_pipeline_onpolicy

    serial_pipeline_onpolicy((main_config, create_config), seed=0)
