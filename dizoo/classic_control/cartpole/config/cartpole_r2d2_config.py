"""CartPole R2D2: an LSTM Q-network on stored sequences that overlap (burn-in, 3-step double Q, value rescaling,
prioritized sequences).

Run: ``ding -m serial -c config/serial/cartpole_r2d2.py -s 0``
or ``python -m dizoo.classic_control.cartpole.config.cartpole_r2d2_config``.
"""
from easydict import EasyDict

cartpole_r2d2_config = dict(
    exp_name='cartpole_r2d2_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=195,
    ),
    policy=dict(
        cuda=False,
        priority=True,  # a sequence's priority: 0.9 * max |td| + 0.1 * mean |td|
        priority_IS_weight=True,
        model=dict(
            obs_shape=4,
            action_shape=2,
            encoder_hidden_size_list=[128, 64],
        ),
        discount_factor=0.97,
        nstep=3,
        burnin_step=4,  # steps that only warm the stored LSTM state up
        learn_unroll_len=16,  # trained steps per sequence (sequences hold 4 + 16 transitions)
        # a new sequence every 8 steps of an episode: sequences overlap and every step is trained in two of them
        # (the episode's first sequence trains from step 0 after a padded burn-in); None: DI-engine's split
        replay_period=8,
        learn=dict(
            update_per_collect=4,
            batch_size=32,
            learning_rate=0.001,
            target_update_freq=100,
            value_rescale=True,
        ),
        collect=dict(n_sample=8),  # sequences per collect
        eval=dict(evaluator=dict(eval_freq=20)),
        other=dict(
            eps=dict(
                type='exp',
                start=0.95,
                end=0.05,
                decay=10000,
            ),
            replay_buffer=dict(replay_buffer_size=5000),  # sequences
        ),
    ),
)
cartpole_r2d2_config = EasyDict(cartpole_r2d2_config)
main_config = cartpole_r2d2_config

cartpole_r2d2_create_config = dict(
    env=dict(
        type='cartpole',
        import_names=['dizoo.classic_control.cartpole.envs.cartpole_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='r2d2'),
    replay_buffer=dict(type='advanced'),
)
cartpole_r2d2_create_config = EasyDict(cartpole_r2d2_create_config)
create_config = cartpole_r2d2_create_config

if __name__ == "__main__":
    from ding.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
