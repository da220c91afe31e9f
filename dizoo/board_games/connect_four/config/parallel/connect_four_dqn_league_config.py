"""Connect Four (4x5 board, three in a row) by league self-play in parallel mode: a coordinator with the one_vs_one
commander and its league, one DQN learner training the main player, two marine collectors playing its games.

Run: ``ding -m parallel -c dizoo/board_games/connect_four/config/parallel/connect_four_dqn_league_config.py -s 0``.

The league picks each collect task's opponent for the main player (itself, or one of its snapshots by PFSP) or, in
80% of the tasks, the scripted player (wins when it can, blocks when it must); the evaluations play the learner's
policy, moving first, against the scripted player and the console shows the win rate. See docs/league.md (parallel
mode).
"""
from easydict import EasyDict

connect_four_dqn_league_config = dict(
    exp_name='connect_four_dqn_league_parallel_seed0',
    env=dict(
        collector_env_num=4,
        evaluator_env_num=4,
        n_evaluator_episode=40,
        first_player='alternate',  # training games: the seats take turns to move first
        eval_first_player=0,  # evaluation games: the learner's player moves first (as the serial league config)
        stop_value=0.9,  # player 0's mean return against the scripted player (+1 a win, -1 a loss)
    ),
    policy=dict(
        cuda=False,
        model=dict(
            obs_shape=41,  # each player's view: its pieces, the opponent's (4x5 each) and a to-move flag
            action_shape=5,
            encoder_hidden_size_list=[128, 128, 64],
            dueling=True,
        ),
        nstep=3,  # a win reaches the decisions that led to it sooner
        discount_factor=0.95,
        learn=dict(
            update_per_collect=16,
            batch_size=64,
            learning_rate=0.001,
            target_update_freq=50,
            learner=dict(
                learner_num=1,
                send_policy_freq=10,
                hook=dict(log_show_after_iter=200, save_ckpt_after_iter=1000),
            ),
        ),
        collect=dict(
            n_sample=32,
            collector=dict(
                collector_num=2,
                update_policy_second=0.2,
                eval_opponent='dizoo.board_games.connect_four.envs:ScriptedPlayer',
            ),
        ),
        eval=dict(evaluator=dict(eval_freq=200)),
        other=dict(
            eps=dict(type='exp', start=0.9, end=0.05, decay=2000),
            replay_buffer=dict(replay_buffer_size=20000),
            commander=dict(eval_interval=10),
            league=dict(
                player_category=['default'],
                active_players=dict(main_player=1),
                main_player=dict(one_phase_step=200, branch_probs=dict(pfsp=0.5, sp=0.5), strong_win_rate=0.7),
                payoff=dict(decay=0.99, min_win_rate_games=8),
                # most tasks play the scripted player (their games stay out of the payoff table): pure self-play
                # gives no signal about the blocker's weakness early on (docs/league.md)
                fixed_opponent_prob=0.8,
            ),
        ),
    ),
)
connect_four_dqn_league_config = EasyDict(connect_four_dqn_league_config)
main_config = connect_four_dqn_league_config

connect_four_dqn_league_create_config = dict(
    env=dict(type='connect_four', import_names=['dizoo.board_games.connect_four.envs']),
    env_manager=dict(type='base'),
    policy=dict(type='dqn'),
    replay_buffer=dict(type='deque'),
    learner=dict(type='base', import_names=['ding.worker.learner.base_learner']),
    collector=dict(type='marine', import_names=['ding.worker.collector.marine_parallel_collector']),
    commander=dict(type='one_vs_one', import_names=['ding.worker.coordinator.one_vs_one_parallel_commander']),
    comm_learner=dict(type='flask_fs', import_names=['ding.worker.learner.comm.flask_fs_learner']),
    comm_collector=dict(type='flask_fs', import_names=['ding.worker.collector.comm.flask_fs_collector']),
)
connect_four_dqn_league_create_config = EasyDict(connect_four_dqn_league_create_config)
create_config = connect_four_dqn_league_create_config

connect_four_dqn_league_system_config = dict(
    coordinator=dict(),
    path_data=f'./{main_config.exp_name}/data',
    path_policy=f'./{main_config.exp_name}/policy',
    communication_mode='auto',
    learner_gpu_num=1,
)
connect_four_dqn_league_system_config = EasyDict(connect_four_dqn_league_system_config)
system_config = connect_four_dqn_league_system_config

if __name__ == "__main__":
    from ding.entry.parallel_entry import parallel_pipeline

    parallel_pipeline((main_config, create_config, system_config), seed=0)
