"""Connect Four (4 rows x 5 columns, three in a row) by PPO self-play over a league, evaluated against the scripted
player (wins when it can, blocks when it must). See docs/league.md ("Connect Four: the choices").

Run: ``ding -m serial_battle -c config/serial/connect_four_ppo_league.py -s 0 --env-step 300000`` (the budget
config/README.md promises; docs/benchmarks.md has what seeds 0-2 reached).
"""
from easydict import EasyDict

connect_four_ppo_league_config = dict(
    exp_name='connect_four_ppo_league_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=10,
        n_evaluator_episode=100,
        board_rows=4,
        board_cols=5,
        win_length=3,
        first_player='alternate',  # training games: the seats take turns to move first
        # evaluation games: the first player alternates too (evaluator env i starts with seat (seed + i) % 2, so
        # the 10 envs play 50 games moving first and 50 moving second; see docs/league.md)
        eval_first_player='alternate',
        # the main player's mean return against the scripted player over 100 games (+1 win, 0 draw, -1 loss):
        # 0.6 means wins - losses >= 60, i.e. at least 80 wins when no game is drawn (draws are rare on this
        # board: 14 of the 2^20 ways to fill it have no three in a row)
        stop_value=0.6,
    ),
    policy=dict(
        cuda=False,
        action_space='discrete',
        model=dict(
            obs_shape=41,
            action_shape=5,
            action_space='discrete',
            encoder_hidden_size_list=[128, 128],
            actor_head_hidden_size=128,
            critic_head_hidden_size=128,
        ),
        learn=dict(
            epoch_per_collect=4,
            batch_size=128,
            learning_rate=1e-3,
            value_weight=0.5,
            entropy_weight=0.01,
            clip_ratio=0.2,
            learner=dict(hook=dict(log_show_after_iter=1000, save_ckpt_after_iter=200)),
        ),
        collect=dict(
            n_episode=32,
            unroll_len=1,
            discount_factor=1.0,
            gae_lambda=0.95,
            collector=dict(get_train_sample=True),
        ),
        eval=dict(evaluator=dict(eval_freq=100)),
        other=dict(
            league=dict(
                active_players=dict(main_player=1),
                main_player=dict(one_phase_step=100, branch_probs=dict(pfsp=0.5, sp=0.5)),
                fixed_opponent_prob=0.5,  # half the jobs play the scripted player (outside the payoff table)
            ),
        ),
    ),
)
connect_four_ppo_league_config = EasyDict(connect_four_ppo_league_config)
main_config = connect_four_ppo_league_config

connect_four_ppo_league_create_config = dict(
    env=dict(
        type='connect_four',
        import_names=['dizoo.board_games.connect_four.envs.connect_four_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='ppo'),
)
connect_four_ppo_league_create_config = EasyDict(connect_four_ppo_league_create_config)
create_config = connect_four_ppo_league_create_config

if __name__ == "__main__":
    from ding.entry.serial_entry_battle import serial_pipeline_battle

    serial_pipeline_battle((main_config, create_config), seed=0)
