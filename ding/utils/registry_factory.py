"""Every registry of the platform. Plugins register into these."""
from __future__ import annotations

from .registry import Registry

POLICY_REGISTRY = Registry("policy")
ENV_REGISTRY = Registry("env")
ENV_MANAGER_REGISTRY = Registry("env_manager")
ENV_WRAPPER_REGISTRY = Registry("env_wrapper")
MODEL_REGISTRY = Registry("model")
BUFFER_REGISTRY = Registry("buffer")
SERIAL_COLLECTOR_REGISTRY = Registry("serial_collector")
SERIAL_EVALUATOR_REGISTRY = Registry("serial_evaluator")
LEARNER_REGISTRY = Registry("learner")
HOOK_REGISTRY = Registry("learner_hook")
EPISODE_CALLBACK_REGISTRY = Registry("episode_callback")
COMM_LEARNER_REGISTRY = Registry("comm_learner")
COMM_COLLECTOR_REGISTRY = Registry("comm_collector")
PARALLEL_COLLECTOR_REGISTRY = Registry("parallel_collector")
COMMANDER_REGISTRY = Registry("parallel_commander")
SERIAL_COMMANDER_REGISTRY = Registry("serial_commander")
LEAGUE_REGISTRY = Registry("league")
PLAYER_REGISTRY = Registry("player")
REWARD_MODEL_REGISTRY = Registry("reward_model")
WORLD_MODEL_REGISTRY = Registry("world_model")
LOGGER_REGISTRY = Registry("logger")  # experiment trackers beside TensorBoard (ding/utils/tracking)

ALL_REGISTRIES: dict[str, Registry] = {
    r.name: r
    for r in (
        POLICY_REGISTRY, ENV_REGISTRY, ENV_MANAGER_REGISTRY, ENV_WRAPPER_REGISTRY, MODEL_REGISTRY, BUFFER_REGISTRY,
        SERIAL_COLLECTOR_REGISTRY, SERIAL_EVALUATOR_REGISTRY, LEARNER_REGISTRY, HOOK_REGISTRY,
        EPISODE_CALLBACK_REGISTRY, COMM_LEARNER_REGISTRY, COMM_COLLECTOR_REGISTRY, PARALLEL_COLLECTOR_REGISTRY,
        COMMANDER_REGISTRY, SERIAL_COMMANDER_REGISTRY, LEAGUE_REGISTRY, PLAYER_REGISTRY, REWARD_MODEL_REGISTRY,
        WORLD_MODEL_REGISTRY, LOGGER_REGISTRY,
    )
}
