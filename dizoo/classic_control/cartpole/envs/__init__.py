from .cartpole_env import CartPoleEnv
from .step_cost_cartpole_env import StepCostCartPoleEnv
