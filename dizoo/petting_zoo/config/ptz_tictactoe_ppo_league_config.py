"""PettingZoo's tic-tac-toe (``pettingzoo.classic.tictactoe_v3``, an AEC game, env type ``petting_zoo_battle``) by PPO
self-play over a league, evaluated against a uniformly random legal player (docs/multi_agent.md).

Run: ``ding -m serial_battle -c dizoo/petting_zoo/config/ptz_tictactoe_ppo_league_config.py -s 0 --env-step 200000``
"""
from easydict import EasyDict

ptz_tictactoe_ppo_league_config = dict(
    exp_name='ptz_tictactoe_ppo_league_seed0',
    env=dict(
        collector_env_num=8,
        evaluator_env_num=10,
        n_evaluator_episode=100,
        env_id='pettingzoo.classic.tictactoe_v3',
        first_player='alternate',  # the seats take turns to move first, in training and in evaluation
        eval_first_player='alternate',
        # mean return against the random player over 100 games (+1 win, 0 draw, -1 loss): 0.9 means >= 90 wins
        stop_value=0.9,
    ),
    policy=dict(
        cuda=False,
        action_space='discrete',
        model=dict(
            obs_shape=28,
            action_shape=9,
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
                fixed_opponent_prob=0.5,  # half the jobs play the random player (outside the payoff table)
            ),
        ),
    ),
)
ptz_tictactoe_ppo_league_config = EasyDict(ptz_tictactoe_ppo_league_config)
main_config = ptz_tictactoe_ppo_league_config

ptz_tictactoe_ppo_league_create_config = dict(
    env=dict(
        type='petting_zoo_battle',
        import_names=['dizoo.petting_zoo.envs.aec_battle_env'],
    ),
    env_manager=dict(type='base'),
    policy=dict(type='ppo'),
)
ptz_tictactoe_ppo_league_create_config = EasyDict(ptz_tictactoe_ppo_league_create_config)
create_config = ptz_tictactoe_ppo_league_create_config

if __name__ == "__main__":
    from ding.entry.serial_entry_battle import serial_pipeline_battle

    serial_pipeline_battle((main_config, create_config), seed=0)
