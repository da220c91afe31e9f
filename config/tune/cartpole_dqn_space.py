"""The search space of the CartPole DQN config (config/serial/cartpole_dqn.py): learning rate, batch size and target
network update frequency (docs/tuning.md)::

    ding -m tune -c config/serial/cartpole_dqn.py --space config/tune/cartpole_dqn_space.py --trials 16 --env-step 4000
"""
from optuna.distributions import CategoricalDistribution, FloatDistribution

space = {
    "policy.learn.learning_rate": FloatDistribution(1e-5, 1e-2, log=True),
    "policy.learn.batch_size": CategoricalDistribution([32, 64, 128]),
    "policy.learn.target_update_freq": CategoricalDistribution([10, 100, 500, 2000]),
}
