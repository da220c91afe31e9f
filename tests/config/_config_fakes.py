"""Small stand-in components for the compile_config tests (registered by the tests' fixture, then removed)."""
from __future__ import annotations

import copy

from easydict import EasyDict

from ding.utils import (
    BUFFER_REGISTRY,
    ENV_MANAGER_REGISTRY,
    ENV_REGISTRY,
    LEARNER_REGISTRY,
    POLICY_REGISTRY,
    SERIAL_COLLECTOR_REGISTRY,
    SERIAL_COMMANDER_REGISTRY,
    SERIAL_EVALUATOR_REGISTRY,
)


class Configurable:
    config: dict = {}

    @classmethod
    def default_config(cls) -> EasyDict:
        cfg = EasyDict(copy.deepcopy(cls.config))
        cfg.cfg_type = cls.__name__ + "Dict"
        return cfg


class FakeEnv(Configurable):
    config = dict(env_id="CartPole-v1", frame_skip=1, stop_value=100)


class FreeFormEnv(Configurable):
    """An env without a config of its own: its section is open."""


class FakeEnvManager(Configurable):
    config = dict(episode_num=float("inf"), max_retry=1, step_timeout=None, shared_memory=True)


class FakePolicy(Configurable):
    config = dict(
        type="h2t_policy",
        cuda=False,
        on_policy=False,
        discount_factor=0.97,
        model=dict(obs_shape=None, action_shape=None),
        learn=dict(update_per_collect=3, batch_size=64, learning_rate=0.001,
                   learner=dict(hook=dict(save_ckpt_after_iter=500))),
        collect=dict(n_sample=8, unroll_len=1, collector=dict()),
        eval=dict(evaluator=dict()),
        other=dict(eps=dict(type="exp", start=0.95, end=0.1, decay=10000), replay_buffer=dict(replay_buffer_size=5000),
                   commander=dict()),
    )
    open_config_keys = ("model",)


class FakePrioPolicy(FakePolicy):
    """Prefers the second fake buffer and the episode collector."""

    config = copy.deepcopy(FakePolicy.config)
    config["other"]["replay_buffer"]["type"] = "h2t_buffer2"
    default_collector_type = "h2t_episode_collector"


class FakeOnPolicy(FakePolicy):
    config = dict(FakePolicy.config, on_policy=True)


class FakeLearner(Configurable):
    config = dict(
        train_iterations=int(1e10),
        hook=dict(load_ckpt_before_run="", log_show_after_iter=100, save_ckpt_after_iter=10000,
                  save_ckpt_after_run=True),
    )
    open_config_keys = ("hook",)


class FakeCollector(Configurable):
    config = dict(deepcopy_obs=False, collect_print_freq=100)


class FakeEpisodeCollector(Configurable):
    config = dict(get_train_sample=False)


class FakeEvaluator(Configurable):
    config = dict(eval_freq=1000, render=dict(render_freq=-1, mode="train_iter"))


class FakeBuffer(Configurable):
    config = dict(replay_buffer_size=4096, max_use=float("inf"), alpha=0.6)


class FakeBuffer2(Configurable):
    config = dict(replay_buffer_size=100, beta=0.4)


class FakeCommander(Configurable):
    """A commander that reads no keys: contributes nothing, its section stays open."""


REGISTRATIONS = [
    (ENV_REGISTRY, "h2t_env", FakeEnv),
    (ENV_REGISTRY, "h2t_free_env", FreeFormEnv),
    (ENV_MANAGER_REGISTRY, "h2t_manager", FakeEnvManager),
    (POLICY_REGISTRY, "h2t_policy", FakePolicy),
    (POLICY_REGISTRY, "h2t_prio_policy", FakePrioPolicy),
    (POLICY_REGISTRY, "h2t_on_policy", FakeOnPolicy),
    (LEARNER_REGISTRY, "h2t_learner", FakeLearner),
    (SERIAL_COLLECTOR_REGISTRY, "h2t_collector", FakeCollector),
    (SERIAL_COLLECTOR_REGISTRY, "h2t_episode_collector", FakeEpisodeCollector),
    (SERIAL_EVALUATOR_REGISTRY, "h2t_evaluator", FakeEvaluator),
    (BUFFER_REGISTRY, "h2t_buffer", FakeBuffer),
    (BUFFER_REGISTRY, "h2t_buffer2", FakeBuffer2),
    (SERIAL_COMMANDER_REGISTRY, "h2t_commander", FakeCommander),
]

# A create_config naming every fake, so no built-in default type is looked up.
CREATE = dict(
    env=dict(type="h2t_env"),
    env_manager=dict(type="h2t_manager"),
    policy=dict(type="h2t_policy"),
    learner=dict(type="h2t_learner"),
    collector=dict(type="h2t_collector"),
    evaluator=dict(type="h2t_evaluator"),
    replay_buffer=dict(type="h2t_buffer"),
    commander=dict(type="h2t_commander"),
)

MAIN = dict(
    exp_name="h2t_exp",
    env=dict(collector_env_num=4, evaluator_env_num=2, n_evaluator_episode=4, stop_value=195,
             manager=dict(shared_memory=False)),
    policy=dict(
        model=dict(obs_shape=4, action_shape=2, encoder_hidden_size_list=[128, 64]),
        learn=dict(update_per_collect=5, batch_size=32, learner=dict(hook=dict(my_hook=dict(type="x")))),
        collect=dict(n_sample=16),
        eval=dict(evaluator=dict(eval_freq=40)),
        other=dict(eps=dict(decay=5000), replay_buffer=dict(replay_buffer_size=20000)),
    ),
)
