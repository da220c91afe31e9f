"""CartPole DQN with prioritized replay (proportional, alpha 0.6, IS weights annealed from beta 0.4 to 1).

Run: ``ding -m serial -c config/serial/cartpole_dqn_priority.py -s 0``.
"""
from easydict import EasyDict

cartpole_dqn_priority_config = dict(
    exp_name='cartpole_dqn_priority_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=5,
        n_evaluator_episode=5,
        stop_value=195,
    ),
    policy=dict(
        cuda=False,
        priority=True,  # the learner returns |TD error| per sample; the pipeline feeds it back to the buffer
        priority_IS_weight=True,  # the loss is weighted by the buffer's importance-sampling weights
        model=dict(
            obs_shape=4,
            action_shape=2,
            encoder_hidden_size_list=[128, 128, 64],
            dueling=True,
        ),
        nstep=1,
        discount_factor=0.97,
        learn=dict(
            update_per_collect=5,
            batch_size=64,
            learning_rate=0.001,
        ),
        collect=dict(n_sample=8),
        eval=dict(evaluator=dict(eval_freq=40)),
        other=dict(
            eps=dict(
                type='exp',
                start=0.95,
                end=0.1,
                decay=10000,
            ),
            replay_buffer=dict(
                replay_buffer_size=20000,
                alpha=0.6,
                beta=0.4,
                anneal_step=10000,
            ),
        ),
    ),
)
cartpole_dqn_priority_config = EasyDict(cartpole_dqn_priority_config)
main_config = cartpole_dqn_priority_config

cartpole_dqn_priority_create_config = dict(
    env=dict(
        type='cartpole',
        import_names=['dizoo.classic_control.cartpole.envs.cartpole_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='dqn'),
    replay_buffer=dict(type='advanced'),
)
cartpole_dqn_priority_create_config = EasyDict(cartpole_dqn_priority_create_config)
create_config = cartpole_dqn_priority_create_config

if __name__ == "__main__":
    from ding.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0)
