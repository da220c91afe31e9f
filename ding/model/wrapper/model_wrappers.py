"""DI-engine's model wrappers: ``model_wrap(model, wrapper_name=..., **kwargs)`` layers behaviour (sampling an
action from the model's output, a target network's updates, per-env hidden state, exploration noise) around a model.

A wrapper passes every attribute it does not define to the object it wraps, so ``.train()``, ``.eval()``,
``.state_dict()``, ``.load_state_dict()`` and ``.parameters()`` reach the ``nn.Module`` at the bottom of the stack.
Random draws use the global RNGs (numpy's for epsilon-greedy choices, torch's for sampling and noise), which ding
seeds and saves in checkpoints, so a run that uses wrappers resumes exactly.
"""
from __future__ import annotations

import sys
from typing import Any, Callable

import numpy as np
import torch
import torch.nn as nn
from torch.distributions import Categorical, Independent, Normal

from ding.utils import RegistryError


class IModelWrapper:
    """Base of every wrapper: holds the wrapped object in ``_model`` and forwards unknown attributes to it."""

    def __init__(self, model: Any) -> None:
        self._model = model

    def __getattr__(self, key: str) -> Any:
        # only called when normal lookup fails; '_model' itself must exist (guards against recursion in copy/pickle)
        if key == "_model":
            raise AttributeError(key)
        return getattr(self._model, key)

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        return self._model.forward(*args, **kwargs)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.forward(*args, **kwargs)

    def reset(self, data_id: list[int] | None = None, **kwargs: Any) -> None:
        """Reset per-env state (of the envs ``data_id``; None: all) down the stack."""
        inner = self._model
        if isinstance(inner, IModelWrapper) or hasattr(inner, "reset"):
            inner.reset(data_id=data_id, **kwargs)

    def info(self, attr_name: str) -> str:
        """Which layers of the stack define ``attr_name`` (outermost first), e.g. ``'EpsGreedySampleWrapper DQN'``."""
        own = [type(self).__name__] if attr_name in type(self).__dict__ else []
        inner = self._model
        rest = inner.info(attr_name) if isinstance(inner, IModelWrapper) else type(inner).__name__
        return " ".join(own + [rest])

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._model!r})"


class BaseModelWrapper(IModelWrapper):
    """The bottom wrapper: plain pass-through."""


def _logits_of(output: dict[str, Any]) -> tuple[list[torch.Tensor], bool]:
    """The model output's ``logit`` as a list (a model with several action heads gives a list) and whether it was."""
    if not isinstance(output, dict) or "logit" not in output:
        keys = f" with keys {list(output)}" if isinstance(output, dict) else ""
        raise TypeError(f"sample wrapper: the model must return a dict with 'logit', got {type(output).__name__}{keys}")
    logit = output["logit"]
    return (list(logit), True) if isinstance(logit, (list, tuple)) else ([logit], False)


def _masked(logits: list[torch.Tensor], output: dict[str, Any]) -> list[torch.Tensor]:
    """Logits with the actions ``output['action_mask']`` forbids pushed to -1e8."""
    mask = output.get("action_mask")
    if mask is None:
        return logits
    masks = mask if isinstance(mask, (list, tuple)) else [mask] * len(logits)
    return [lg.masked_fill(m == 0, -1e8) for lg, m in zip(logits, masks)]


def _set_action(output: dict[str, Any], actions: list[torch.Tensor], as_list: bool) -> dict[str, Any]:
    output["action"] = actions if as_list else actions[0]
    return output


def _random_actions(logit: torch.Tensor, output: dict[str, Any], n: int) -> torch.Tensor:
    """Uniform random actions for each row (among the allowed ones when there is an action mask)."""
    mask = output.get("action_mask")
    if mask is not None:
        return Categorical(probs=mask.float()).sample()
    high = logit.shape[-1]
    return torch.from_numpy(np.random.randint(0, high, size=n)).to(logit.device)


class ArgmaxSampleWrapper(IModelWrapper):
    """``action = argmax(logit)`` (greedy)."""

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        output = self._model.forward(*args, **kwargs)
        logits, as_list = _logits_of(output)
        return _set_action(output, [lg.argmax(dim=-1) for lg in _masked(logits, output)], as_list)


class MultinomialSampleWrapper(IModelWrapper):
    """``action ~ softmax(logit / alpha)`` (``alpha``, a keyword of ``forward``, defaults to 1)."""

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        alpha = kwargs.pop("alpha", None)
        output = self._model.forward(*args, **kwargs)
        logits, as_list = _logits_of(output)
        logits = _masked(logits, output)
        if alpha is not None:
            logits = [lg / alpha for lg in logits]
        return _set_action(output, [Categorical(logits=lg).sample() for lg in logits], as_list)


class EpsGreedySampleWrapper(IModelWrapper):
    """``forward(..., eps=e)``: each row's action is uniformly random with probability ``e``, else the argmax."""

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if "eps" not in kwargs:
            raise TypeError("eps_greedy_sample wrapper: forward needs eps=... (the exploration rate, from the "
                            "command mode's get_setting_collect)")
        eps = float(kwargs.pop("eps"))
        output = self._model.forward(*args, **kwargs)
        logits, as_list = _logits_of(output)
        actions = []
        for lg in _masked(logits, output):
            greedy = lg.argmax(dim=-1)
            n = greedy.numel()
            explore = torch.from_numpy(np.random.random_sample(n) < eps).to(greedy.device).view_as(greedy)
            actions.append(torch.where(explore, _random_actions(lg, output, n).view_as(greedy), greedy))
        return _set_action(output, actions, as_list)


class EpsGreedyMultinomialSampleWrapper(IModelWrapper):
    """``forward(..., eps=e, alpha=a)``: uniformly random with probability ``e``, else ``~ softmax(logit / a)``."""

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        if "eps" not in kwargs:
            raise TypeError("eps_greedy_multinomial_sample wrapper: forward needs eps=...")
        eps = float(kwargs.pop("eps"))
        alpha = kwargs.pop("alpha", None)
        output = self._model.forward(*args, **kwargs)
        logits, as_list = _logits_of(output)
        actions = []
        for lg in _masked(logits, output):
            sampled = Categorical(logits=lg / alpha if alpha is not None else lg).sample()
            n = sampled.numel()
            explore = torch.from_numpy(np.random.random_sample(n) < eps).to(sampled.device).view_as(sampled)
            actions.append(torch.where(explore, _random_actions(lg, output, n).view_as(sampled), sampled))
        return _set_action(output, actions, as_list)


class DeterministicSampleWrapper(IModelWrapper):
    """Gaussian policy, evaluation: ``action = logit['mu']``."""

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        output = self._model.forward(*args, **kwargs)
        output["action"] = _mu_sigma(output)[0]
        return output


class ReparamSampleWrapper(IModelWrapper):
    """Gaussian policy, collection: ``action ~ Normal(logit['mu'], logit['sigma'])``."""

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        output = self._model.forward(*args, **kwargs)
        mu, sigma = _mu_sigma(output)
        output["action"] = Independent(Normal(mu, sigma), 1).sample()
        return output


def _mu_sigma(output: Any) -> tuple[torch.Tensor, Any]:
    logit = output.get("logit") if isinstance(output, dict) else None
    if isinstance(logit, dict) and "mu" in logit:
        return logit["mu"], logit.get("sigma")
    if isinstance(logit, (list, tuple)) and len(logit) == 2:
        return logit[0], logit[1]
    raise TypeError("deterministic_sample / reparam_sample wrapper: the model must return {'logit': {'mu', 'sigma'}}"
                    " (or a [mu, sigma] pair)")


class GaussianNoise:
    """``mu + sigma * N(0, 1)`` of a given shape (``sigma`` may be changed between calls)."""

    def __init__(self, mu: float = 0.0, sigma: float = 1.0) -> None:
        self.mu, self.sigma = float(mu), float(sigma)

    def __call__(self, shape: torch.Size, device: Any) -> torch.Tensor:
        return torch.randn(shape, device=device) * self.sigma + self.mu


class OUNoise:
    """Ornstein-Uhlenbeck noise: ``x += theta * (mu - x) * dt + sigma * sqrt(dt) * N(0, 1)`` (state kept between
    calls; a new shape restarts it at ``x0``)."""

    def __init__(self, mu: float = 0.0, sigma: float = 0.3, theta: float = 0.15, dt: float = 1e-2,
                 x0: float | torch.Tensor = 0.0) -> None:
        self.mu, self.sigma, self.theta, self.dt = float(mu), float(sigma), float(theta), float(dt)
        self._x: torch.Tensor | None = None
        self.x0 = x0

    @property
    def x0(self) -> float | torch.Tensor:
        """The starting state (a number, or a tensor of the noise's shape); setting it restarts the process."""
        return self._x0

    @x0.setter
    def x0(self, x0: float | torch.Tensor) -> None:
        self._x0 = x0.clone() if isinstance(x0, torch.Tensor) else float(x0)
        self.reset()

    def reset(self) -> None:
        self._x = self._x0.clone() if isinstance(self._x0, torch.Tensor) else None

    def __call__(self, shape: torch.Size, device: Any) -> torch.Tensor:
        if self._x is None or tuple(self._x.shape) != tuple(shape):
            x0 = self._x0
            self._x = x0.clone().to(device) if isinstance(x0, torch.Tensor) and tuple(x0.shape) == tuple(shape) \
                else torch.full(tuple(shape), float(x0.mean()) if isinstance(x0, torch.Tensor) else x0, device=device)
        self._x = (self._x + self.theta * (self.mu - self._x) * self.dt
                   + self.sigma * (self.dt ** 0.5) * torch.randn(shape, device=device))
        return self._x


NOISE_TYPES: dict[str, type] = {"gauss": GaussianNoise, "ou": OUNoise}


class ActionNoiseWrapper(IModelWrapper):
    """Adds noise to ``output['action']``: the noise is clipped to ``noise_range`` ({'min', 'max'}; None: unclipped),
    then the noisy action to ``action_range`` (None: unclipped). ``forward(..., sigma=s)`` changes the noise scale."""

    def __init__(self, model: Any, noise_type: str = "gauss", noise_kwargs: dict | None = None,
                 noise_range: dict | None = None, action_range: dict | None = None) -> None:
        super().__init__(model)
        if noise_type not in NOISE_TYPES:
            raise ValueError(f"action_noise wrapper: unknown noise_type {noise_type!r}; known: {sorted(NOISE_TYPES)}")
        self.noise_generator = NOISE_TYPES[noise_type](**(noise_kwargs or {}))
        self.noise_range = noise_range
        self.action_range = {"min": -1, "max": 1} if action_range is None else action_range

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        sigma = kwargs.pop("sigma", None)
        if sigma is not None:
            self.noise_generator.sigma = sigma
        output = self._model.forward(*args, **kwargs)
        if isinstance(output, dict) and "action" in output:
            output["action"] = self.add_noise(output["action"])
        return output

    def add_noise(self, action: torch.Tensor) -> torch.Tensor:
        noise = self.noise_generator(action.shape, action.device)
        if self.noise_range is not None:
            noise = noise.clamp(self.noise_range["min"], self.noise_range["max"])
        action = action + noise
        if self.action_range is not None:
            action = action.clamp(self.action_range["min"], self.action_range["max"])
        return action


class TargetNetworkWrapper(IModelWrapper):
    """A target network. ``update(state_dict)`` after each training step: ``update_type='assign'`` copies the
    online weights every ``update_kwargs['freq']``-th call; ``'momentum'`` moves every parameter a fraction
    ``update_kwargs['theta']`` towards the online one. ``update(sd, direct=True)`` copies at once and restarts the
    count; ``reset(target_update_count=n)`` sets the count (e.g. when resuming)."""

    def __init__(self, model: Any, update_type: str, update_kwargs: dict) -> None:
        super().__init__(model)
        if update_type not in ("assign", "momentum"):
            raise ValueError(f"target wrapper: update_type must be 'assign' or 'momentum', got {update_type!r}")
        key = "freq" if update_type == "assign" else "theta"
        if key not in update_kwargs:
            raise ValueError(f"target wrapper: update_type={update_type!r} needs update_kwargs={{'{key}': ...}}")
        self._update_type = update_type
        self._update_kwargs = dict(update_kwargs)
        self._update_count = 0

    def reset(self, data_id: list[int] | None = None, **kwargs: Any) -> None:
        count = kwargs.pop("target_update_count", None)
        if count is not None:
            self._update_count = int(count)
        super().reset(data_id=data_id, **kwargs)

    @property
    def update_count(self) -> int:
        return self._update_count

    def update(self, state_dict: dict[str, Any], direct: bool = False) -> None:
        if direct:
            self._model.load_state_dict(state_dict, strict=True)
            self._update_count = 0
            return
        if self._update_type == "assign":
            self._update_count += 1
            if self._update_count % int(self._update_kwargs["freq"]) == 0:
                self._model.load_state_dict(state_dict, strict=True)
            return
        theta = float(self._update_kwargs["theta"])
        with torch.no_grad():
            for name, p in self._model.named_parameters():
                p.mul_(1.0 - theta).add_(state_dict[name].to(p.device), alpha=theta)
        self._update_count += 1


class HiddenStateWrapper(IModelWrapper):
    """Keeps a recurrent model's hidden state per env: ``forward(data, data_id=[...])`` feeds
    ``data['prev_state']`` = the states of those envs (all ``state_num`` when ``data_id`` is None) and stores the
    model's ``output['next_state']`` back (only for the ids in ``valid_id`` when given). ``reset(data_id=[...])``
    puts those envs back to ``init_fn()`` (or to ``state=[...]``). ``save_prev_state`` also returns the states fed in
    as ``output['prev_state']`` (zeros of the new state's shape where there was none)."""

    def __init__(self, model: Any, state_num: int, save_prev_state: bool = False,
                 init_fn: Callable[[], Any] = lambda: None) -> None:
        super().__init__(model)
        self._state_num = int(state_num)
        self._init_fn = init_fn
        self._save_prev_state = save_prev_state
        self._state: dict[int, Any] = {i: init_fn() for i in range(self._state_num)}

    def forward(self, data: Any, **kwargs: Any) -> Any:
        state_id = kwargs.pop("data_id", None)
        valid_id = kwargs.pop("valid_id", None)
        ids = list(range(self._state_num)) if state_id is None else list(state_id)
        unknown = [i for i in ids if i not in self._state]
        if unknown:
            raise KeyError(f"hidden_state wrapper: data_id {unknown} outside 0..{self._state_num - 1} (state_num)")
        prev = [self._state[i] for i in ids]
        data["prev_state"] = prev
        output = self._model.forward(data, **kwargs)
        h = output.pop("next_state", None)
        if h is not None:
            if len(h) != len(ids):
                raise ValueError(f"hidden_state wrapper: the model returned {len(h)} next states for {len(ids)} ids")
            for i, idx in enumerate(ids):
                if valid_id is None or idx in valid_id:
                    self._state[idx] = h[i]
        if self._save_prev_state:
            output["prev_state"] = [p if p is not None else _zeros_like(h[0]) for p in prev]
        return output

    def reset(self, data_id: list[int] | None = None, **kwargs: Any) -> None:
        state = kwargs.pop("state", None)
        self.reset_state(state, data_id)
        super().reset(data_id=data_id, **kwargs)

    def reset_state(self, state: list | None = None, state_id: list[int] | None = None) -> None:
        ids = list(range(self._state_num)) if state_id is None else list(state_id)
        values = [self._init_fn() for _ in ids] if state is None else list(state)
        if len(values) != len(ids):
            raise ValueError(f"hidden_state wrapper: {len(values)} states for {len(ids)} ids")
        for idx, s in zip(ids, values):
            self._state[idx] = s


def _zeros_like(x: Any) -> Any:
    if isinstance(x, torch.Tensor):
        return torch.zeros_like(x)
    if isinstance(x, dict):
        return {k: _zeros_like(v) for k, v in x.items()}
    if isinstance(x, (list, tuple)):
        return type(x)(_zeros_like(v) for v in x)
    return x


WRAPPERS: dict[str, type] = {
    "base": BaseModelWrapper,
    "argmax_sample": ArgmaxSampleWrapper,
    "multinomial_sample": MultinomialSampleWrapper,
    "eps_greedy_sample": EpsGreedySampleWrapper,
    "eps_greedy_multinomial_sample": EpsGreedyMultinomialSampleWrapper,
    "deterministic_sample": DeterministicSampleWrapper,
    "reparam_sample": ReparamSampleWrapper,
    "action_noise": ActionNoiseWrapper,
    "target": TargetNetworkWrapper,
    "hidden_state": HiddenStateWrapper,
}


def model_wrap(model: nn.Module | IModelWrapper, wrapper_name: str | None = None, **kwargs: Any) -> IModelWrapper:
    """Wrap ``model`` (a module gets a ``base`` wrapper first) in the wrapper registered as ``wrapper_name``."""
    cls = WRAPPERS.get(wrapper_name) if isinstance(wrapper_name, str) else None
    if cls is None:
        caller = sys._getframe(1)
        raise RegistryError(f"model_wrap: no model wrapper named {wrapper_name!r} in ding, asked for by "
                            f"{caller.f_code.co_filename}, line {caller.f_lineno} (known: "
                            f"{', '.join(sorted(WRAPPERS))}); register one with "
                            f"ding.model.register_wrapper(name, cls)")
    if not isinstance(model, IModelWrapper):
        model = BaseModelWrapper(model)
    return cls(model, **kwargs)


def register_wrapper(name: str, wrapper_type: type) -> None:
    """Make ``model_wrap(model, wrapper_name=name)`` use ``wrapper_type`` (a subclass of ``IModelWrapper``)."""
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_wrapper: name must be a non-empty str, got {name!r}")
    if not (isinstance(wrapper_type, type) and issubclass(wrapper_type, IModelWrapper)):
        raise TypeError(f"register_wrapper({name!r}): {wrapper_type!r} is not a subclass of IModelWrapper")
    WRAPPERS[name] = wrapper_type
