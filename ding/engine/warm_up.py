"""The random warm-up collect before training (``policy.random_collect_size``), DI-engine's ``random_collect``, and
its two sample markers (``mark_not_expert``, ``mark_warm_up``). ``ding.entry.utils`` is their DI-engine path."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ding.policy import get_random_policy


def random_collect(policy_cfg: Any, policy: Any, collector: Any, collector_env: Any, commander: Any,
                   replay_buffer: Any, postprocess_data_fn: Callable[[list], list] | None = None) -> None:
    """Collect ``policy_cfg.random_collect_size`` samples (episodes, for an episode collector) with uniformly random
    actions -- or with the policy itself if ``policy_cfg.transition_with_policy_data`` -- push them into
    ``replay_buffer`` (after ``postprocess_data_fn``), then give the collector the policy back. ``commander`` (or
    None) supplies the collect kwargs, e.g. epsilon."""
    size = int(policy_cfg.get("random_collect_size", 0))
    if size <= 0:
        raise ValueError(f"random_collect: policy.random_collect_size must be > 0, got {size}")
    if policy_cfg.get("transition_with_policy_data", False):
        collector.reset_policy(policy.collect_mode)
    else:
        collector.reset_policy(get_random_policy(policy.collect_mode, collector_env.action_space))
    kwargs = commander.step() if commander is not None else {}
    collector_type = policy_cfg.get("collect", {}).get("collector", {}).get("type", "sample")
    if collector_type == "episode":
        data = collector.collect(n_episode=size, policy_kwargs=kwargs)
    else:
        data = collector.collect(n_sample=size, train_iter=0, random_collect=True, record_random_collect=False,
                                 policy_kwargs=kwargs)
    if postprocess_data_fn is not None:
        data = postprocess_data_fn(data)
    replay_buffer.push(data, cur_collector_envstep=collector.envstep)
    collector.reset_policy(policy.collect_mode)


def mark_not_expert(ori_data: list[dict]) -> list[dict]:
    """Set ``is_expert = 0`` on every sample (in place; returned too)."""
    for d in ori_data:
        d["is_expert"] = 0
    return ori_data


def mark_warm_up(ori_data: list[dict]) -> list[dict]:
    """Set ``warm_up = True`` on every sample (in place; returned too)."""
    for d in ori_data:
        d["warm_up"] = True
    return ori_data
