"""CartPole DQN in parallel mode: a coordinator, one learner and two collectors on one machine.

Run: ``ding -m parallel -c config/parallel/cartpole_dqn.py -s 0``
(or ``python -m dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config``).

Same hyperparameters as the serial config; the commander keeps the serial ratio of train iterations per collected
sample (update_per_collect / n_sample), so the run learns like the serial one while collectors and learner overlap.
"""
from easydict import EasyDict

cartpole_dqn_config = dict(
    exp_name='cartpole_dqn_parallel_seed0',
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
            encoder_hidden_size_list=[128, 128, 64],
            dueling=True,
        ),
        nstep=1,
        discount_factor=0.97,
        learn=dict(
            update_per_collect=10,
            batch_size=64,
            learning_rate=0.001,
            learner=dict(
                learner_num=1,
                send_policy_freq=10,
                hook=dict(log_show_after_iter=200, save_ckpt_after_iter=500),
            ),
        ),
        collect=dict(
            n_sample=16,
            collector=dict(
                collector_num=2,
                update_policy_second=0.1,
            ),
        ),
        eval=dict(evaluator=dict(eval_freq=40)),
        other=dict(
            eps=dict(
                type='exp',
                start=0.95,
                end=0.1,
                decay=10000,
            ),
            replay_buffer=dict(replay_buffer_size=20000),
            commander=dict(eval_interval=5),
        ),
    ),
)
cartpole_dqn_config = EasyDict(cartpole_dqn_config)
main_config = cartpole_dqn_config

cartpole_dqn_create_config = dict(
    env=dict(
        type='cartpole',
        import_names=['dizoo.classic_control.cartpole.envs.cartpole_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='dqn'),
    replay_buffer=dict(type='deque'),
    learner=dict(type='base', import_names=['ding.worker.learner.base_learner']),
    collector=dict(type='zergling', import_names=['ding.worker.collector.zergling_parallel_collector']),
    commander=dict(type='solo', import_names=['ding.worker.coordinator.solo_parallel_commander']),
    comm_learner=dict(type='flask_fs', import_names=['ding.worker.learner.comm.flask_fs_learner']),
    comm_collector=dict(type='flask_fs', import_names=['ding.worker.collector.comm.flask_fs_collector']),
)
cartpole_dqn_create_config = EasyDict(cartpole_dqn_create_config)
create_config = cartpole_dqn_create_config

cartpole_dqn_system_config = dict(
    coordinator=dict(),
    path_data=f'./{main_config.exp_name}/data',
    path_policy=f'./{main_config.exp_name}/policy',
    communication_mode='auto',
    learner_gpu_num=1,
)
cartpole_dqn_system_config = EasyDict(cartpole_dqn_system_config)
system_config = cartpole_dqn_system_config

if __name__ == "__main__":
    from ding.entry.parallel_entry import parallel_pipeline

    parallel_pipeline((main_config, create_config, system_config), seed=0)
