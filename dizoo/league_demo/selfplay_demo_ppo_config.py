"""Self-play PPO on the league demo's prisoner's dilemma, with DI-engine's keys and values.

``env.stop_value`` holds one value per evaluator: player 0's mean return against a player that always cooperates
(action 0) and against a uniformly random one. Run: ``python -m dizoo.league_demo.selfplay_demo_ppo_main``.
"""
from easydict import EasyDict

selfplay_demo_ppo_config = EasyDict(dict(
    exp_name="selfplay_demo_ppo",
    env=dict(
        collector_env_num=8,
        evaluator_env_num=10,
        n_evaluator_episode=100,
        env_type="prisoner_dilemma",  # or 'zero_sum'
        stop_value=[-10.1, -5.05],  # [against always-cooperate, against uniform random]
        manager=dict(shared_memory=False),
    ),
    policy=dict(
        cuda=False,
        action_space="discrete",
        model=dict(
            obs_shape=2,
            action_shape=2,
            action_space="discrete",
            encoder_hidden_size_list=[32, 32],
            critic_head_hidden_size=32,
            actor_head_hidden_size=32,
            share_encoder=False,
        ),
        learn=dict(update_per_collect=3, batch_size=32, learning_rate=1e-5, entropy_weight=0.0),
        collect=dict(
            n_episode=128,
            unroll_len=1,
            discount_factor=1.0,
            gae_lambda=1.0,
            collector=dict(get_train_sample=True),
        ),
    ),
))
main_config = selfplay_demo_ppo_config
