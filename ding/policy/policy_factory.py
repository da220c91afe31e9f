"""A random-action stand-in for a policy's collect mode (used for ``random_collect_size`` warm-up)."""
from __future__ import annotations

from typing import Any, Callable

import numpy as np

from .base_policy import PolicyCollectMode


def _sampler(action_space: Any) -> Callable[[int], list[Any]]:
    """A function ``n -> list of n random actions`` drawing from numpy's global RNG (so ``set_pkg_seed`` makes it
    reproducible) for Discrete, MultiDiscrete and bounded Box spaces; other spaces use ``action_space.sample()``."""
    import gymnasium as gym

    if isinstance(action_space, gym.spaces.Discrete):
        low, high = int(action_space.start), int(action_space.start + action_space.n)

        def sample(n: int) -> list[Any]:
            actions = np.random.randint(low, high, size=n).astype(np.int64)
            return [actions[i, ...] for i in range(n)]  # 0-d int64 arrays, like DQN's output
        return sample
    if isinstance(action_space, gym.spaces.MultiDiscrete):
        nvec = np.asarray(action_space.nvec)

        def sample(n: int) -> list[Any]:
            actions = (np.random.random_sample((n,) + nvec.shape) * nvec).astype(np.int64)
            return list(actions)
        return sample
    if isinstance(action_space, gym.spaces.Box) and action_space.is_bounded():
        box_low, box_high = action_space.low, action_space.high

        def sample(n: int) -> list[Any]:
            actions = np.random.uniform(box_low, box_high, size=(n,) + box_low.shape).astype(action_space.dtype)
            return list(actions)
        return sample
    if isinstance(action_space, gym.spaces.Dict):  # a multi-agent env: one array of the agents' actions, in order
        parts = [_sampler(space) for space in action_space.spaces.values()]

        def sample(n: int) -> list[Any]:
            per_agent = [part(n) for part in parts]
            return [np.stack([np.asarray(actions[i]) for actions in per_agent]) for i in range(n)]
        return sample
    if hasattr(action_space, "sample"):
        return lambda n: [action_space.sample() for _ in range(n)]
    raise TypeError(f"get_random_policy: action_space must be a gymnasium space, got {type(action_space).__name__}")


def get_random_policy(
    policy: PolicyCollectMode,
    action_space: Any = None,
    forward_fn: Callable[..., dict[int, dict[str, Any]]] | None = None,
) -> PolicyCollectMode:
    """A collect-mode view that acts at random but processes data like ``policy``.

    ``forward({env_id: obs}, **kwargs) -> {env_id: {'action': ...}}`` samples from ``action_space`` (plus
    ``'logit'`` = zeros, the logits of a uniform policy, for a Discrete space, so the output has the same keys as a
    discrete-action policy's). ``forward_fn`` replaces that forward entirely. ``process_transition``,
    ``get_train_sample``, ``reset``, attributes and state dicts are ``policy``'s own.
    """
    if forward_fn is None:
        if action_space is None:
            raise ValueError("get_random_policy: pass the env's action_space (e.g. env_manager.action_space) "
                             "or a forward_fn")
        import gymnasium as gym

        sample = _sampler(action_space)
        n_logit = int(action_space.n) if isinstance(action_space, gym.spaces.Discrete) else 0

        def forward_fn(data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
            actions = sample(len(data))
            if n_logit:
                logit = np.zeros((len(data), n_logit), dtype=np.float32)
                return {env_id: {"action": a, "logit": logit[i]} for i, (env_id, a) in enumerate(zip(data, actions))}
            return {env_id: {"action": a} for env_id, a in zip(data, actions)}

    return PolicyCollectMode(
        forward_fn, policy.process_transition, policy.get_train_sample, policy.reset, policy.get_attribute,
        policy.set_attribute, policy.state_dict, policy.load_state_dict,
    )


class PolicyFactory:
    """DI-engine's home of ``get_random_policy``."""

    get_random_policy = staticmethod(get_random_policy)
