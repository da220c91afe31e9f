"""RoadRunner DQN on 2 CPU cores: the Nature CNN, 3-step double DQN, one update every 4 env steps.

Needs ale-py: ``pip install -e '.[atari]'``. The proof-of-learning config of docs/benchmarks.md (Atari): a game with
dense rewards (seeds along the road), where random play scores about 10 points; the budget is 100,000 env steps
(400,000 frames, about 24,500 updates), evaluated on 5 full games with unclipped scores
(``tests/benchmark/bench_atari_learning.py``, next to Stable-Baselines3's DQN). Its learning curve over the whole
budget has not been measured yet (docs/benchmarks.md says what has).

Run: ``ding -m serial -c config/serial/roadrunner_dqn.py -s 0``
or ``python -m dizoo.atari.config.serial.roadrunner.roadrunner_dqn_config``.
"""
from easydict import EasyDict

roadrunner_dqn_config = dict(
    exp_name='roadrunner_dqn_seed0',
    env=dict(
        collector_env_num=4,
        evaluator_env_num=5,
        n_evaluator_episode=5,  # full games, unclipped scores (evaluator envs: no episodic life, no clipping)
        stop_value=100000,  # never reached: the run goes to its env-step budget
        env_id='RoadRunnerNoFrameskip-v4',
        frame_stack=4,
    ),
    policy=dict(
        cuda=False,
        model=dict(
            obs_shape=[4, 84, 84],  # no encoder_hidden_size_list: the Nature CNN
            action_shape=18,
            dueling=False,
        ),
        nstep=3,
        discount_factor=0.99,
        random_collect_size=2000,  # random actions before the first update (SB3's learning_starts)
        learn=dict(
            update_per_collect=4,  # with n_sample=16: one update of 32 every 4 env steps
            batch_size=32,
            learning_rate=0.0001,
            target_update_freq=500,  # updates (2,000 env steps)
        ),
        collect=dict(n_sample=16, unroll_len=1),
        eval=dict(evaluator=dict(eval_freq=1250)),  # updates: an evaluation every 5,000 env steps
        other=dict(
            eps=dict(type='linear', start=1.0, end=0.01, decay=20000),  # env steps
            replay_buffer=dict(replay_buffer_size=100000),
        ),
    ),
)
roadrunner_dqn_config = EasyDict(roadrunner_dqn_config)
main_config = roadrunner_dqn_config

roadrunner_dqn_create_config = dict(
    env=dict(
        type='atari',
        import_names=['dizoo.atari.envs.atari_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='dqn'),
    replay_buffer=dict(type='deque'),
)
roadrunner_dqn_create_config = EasyDict(roadrunner_dqn_create_config)
create_config = roadrunner_dqn_create_config

if __name__ == "__main__":
    from ding.entry import serial_pipeline

    serial_pipeline((main_config, create_config), seed=0, max_env_step=100000)
