"""What PPO and A2C share: acting with a VAC model, on-policy transitions, GAE targets, evaluation.

The learn update is each algorithm's own (``ppo.py``, ``a2c.py``); this base collects and prepares its data:

- collect: sample an action from the current policy (categorical logits or a diagonal Gaussian) with numpy's global
  RNG, and keep the distribution parameters (``logit``) and the state value (``value``) with the transition;
- a transition's ``done`` is termination only: an episode cut by a time limit keeps ``done=False`` and its
  ``next_obs`` is the final observation, so GAE bootstraps from ``V(final obs)``; ``traj_flag`` marks the last step
  of each collected segment (episode end or a cut by the collector), where the GAE recursion stops;
- :meth:`_gae_targets` computes advantages and returns from the current critic (``V(obs)``, ``V(next_obs)``).
"""
from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import torch
import torch.nn as nn

from ding.config.ranges import at_least, between, greater_than, one_of
from ding.rl_utils import gae, gae_data
from ding.torch_utils import obs_to_float
from ding.utils import ConfigError
from ding.utils.data import SAMPLE_BATCH_TYPES, stack_field

from .base_policy import Policy
from .common_utils import batch_obs, model_obs_shape

ACTION_SPACES = ("discrete", "continuous")
_SAMPLE_KEYS = ("obs", "next_obs", "action", "logit", "value", "reward", "done", "traj_flag")


class ActorCriticPolicy(Policy):
    """Base of the on-policy actor-critic policies (PPO, A2C) over a ``VAC``-like model: ``model(obs, mode)`` with
    modes ``compute_actor`` -> ``{'logit'}``, ``compute_critic`` -> ``{'value'}``, ``compute_actor_critic``."""

    # ding's numpy data convention (ding/policy/tensor_io.py): the views are the bound methods themselves
    tensor_io = False
    config = dict(
        # Trains on fresh data only: run it with serial_pipeline_onpolicy (ding -m serial_onpolicy).
        on_policy=True,
        # 'discrete' (Discrete actions, categorical policy) or 'continuous' (Box actions, Gaussian policy); the
        # model's action_space follows it when policy.model.action_space is not set.
        action_space="discrete",
        # VAC model kwargs, e.g. obs_shape=4, action_shape=2, encoder_hidden_size_list=[64, 64].
        model=dict(),
        learn=dict(
            # Samples per minibatch (one gradient step each).
            batch_size=64,
            # Adam learning rate.
            learning_rate=1e-3,
            # Weight of the value loss (the policy loss has weight 1).
            value_weight=0.5,
            # Weight of the entropy bonus.
            entropy_weight=0.01,
            # Normalise the advantages of each minibatch to mean 0, std 1.
            adv_norm=True,
            # Treat every transition as non-terminal (always bootstrap). Time-limit truncation never needs this:
            # it is already bootstrapped.
            ignore_done=False,
        ),
        collect=dict(
            # Samples per collect call (sample collector); or policy.collect.n_episode with the episode collector.
            n_sample=None,
            # Actor-critic samples are single transitions: must be 1.
            unroll_len=1,
            # Discount factor gamma (DI-engine keeps it here, in collect).
            discount_factor=0.99,
            # GAE lambda: 0 = one-step TD advantage, 1 = Monte Carlo return minus the value.
            gae_lambda=0.95,
        ),
    )
    config_ranges = {
        "action_space": one_of(*ACTION_SPACES),
        "learn.batch_size": at_least(1, integer=True),
        "learn.learning_rate": greater_than(0),
        "learn.value_weight": at_least(0),
        "learn.entropy_weight": at_least(0),
        "collect.n_sample": at_least(1, integer=True),
        "collect.discount_factor": between(0, 1),
        "collect.gae_lambda": between(0, 1),
    }
    # the class acts in either; an instance in the one its policy.action_space names (see _create_model)
    action_space_types: tuple[type, ...] | None = (gym.spaces.Discrete, gym.spaces.Box)

    def default_model(self) -> tuple[str, list[str]]:
        return "vac", ["ding.model.template.vac"]

    def _create_model(self, cfg: Any, model: nn.Module | None) -> nn.Module:
        space = cfg.get("action_space")
        if space not in ACTION_SPACES:
            raise ConfigError(f"policy.action_space: {space!r} is not one of {ACTION_SPACES} ({type(self).__name__} "
                              "acts in Discrete or Box action spaces)")
        self._continuous = space == "continuous"
        # the kind of env action space this instance acts in (checked at set-up by check_policy_fits_env)
        self.action_space_types = (gym.spaces.Box,) if self._continuous else (gym.spaces.Discrete,)
        model_space = cfg.model.get("action_space")
        if model is None and model_space is None and "type" not in cfg.model:
            cfg.model.action_space = space  # the policy's action space decides the default model's head
        elif model_space is not None and model_space != space:
            raise ConfigError(f"policy.model.action_space is {model_space!r} but policy.action_space is {space!r}; "
                              "set both to the env's kind of action ('discrete' or 'continuous')")
        return super()._create_model(cfg, model)

    def _init_gae(self) -> None:
        """Read the discount and GAE lambda (DI-engine keeps them in ``collect``; the learner uses them)."""
        self._gamma = float(self._cfg.collect.discount_factor)
        self._gae_lambda = float(self._cfg.collect.gae_lambda)

    def _set_train(self, training: bool) -> None:
        if self._model.training != training:
            self._model.train(training)

    # ------------------------------------------------------------------ learn data
    def _collate(self, data: list[dict[str, Any]], where: str) -> dict[str, Any]:
        """Stack the fields the update reads (one stack each), on the policy's device."""
        if not isinstance(data, SAMPLE_BATCH_TYPES) or len(data) == 0:
            got = "an empty list" if isinstance(data, SAMPLE_BATCH_TYPES) else type(data).__name__
            raise ValueError(f"{where}: expected a non-empty list of samples, got {got}")
        if isinstance(data[0], (list, tuple)):
            raise ValueError(f"{where}: got a list of episodes; give the samples of each (with the episode collector "
                             "set policy.collect.collector.get_train_sample=True)")
        missing = [k for k in _SAMPLE_KEYS if k not in data[0]]
        if missing:
            raise ValueError(f"{where}: samples lack key(s) {missing}; they have {sorted(data[0])} (samples must come "
                             f"from {type(self).__name__}'s collect_mode.process_transition / get_train_sample)")
        batch = {k: stack_field(data, k) for k in _SAMPLE_KEYS}
        batch["done"], batch["traj_flag"] = batch["done"].bool(), batch["traj_flag"].bool()
        if self._cfg.learn.ignore_done:
            batch["done"] = torch.zeros_like(batch["done"])
        n = len(data)
        if self._continuous:  # default_collate squeezes 1-d actions to (B,): a Gaussian needs (B, action_dim)
            batch["action"] = batch["action"].reshape(n, -1).float()
            batch["logit"] = {k: v.reshape(n, -1) for k, v in batch["logit"].items()}
        elif batch["action"].dim() > 1:
            batch["action"] = batch["action"].reshape(-1)
        if self._device.type != "cpu":
            batch = _to_device(batch, self._device)
        batch["obs"], batch["next_obs"] = obs_to_float(batch["obs"]), obs_to_float(batch["next_obs"])  # on the device
        return batch

    @torch.no_grad()
    def _gae_targets(self, batch: dict[str, Any], value_scale: float = 1.0) -> tuple[torch.Tensor, torch.Tensor,
                                                                                      torch.Tensor]:
        """``(value, adv, return)`` from the current critic: GAE over the samples' segments with ``V(next_obs)``
        for bootstrapping (a time-limit cut bootstraps from the final observation). ``value_scale`` turns the
        critic's output into returns (value normalisation); ``value`` is the critic's raw output."""
        value = self._model(batch["obs"], mode="compute_critic")["value"]
        next_value = self._model(batch["next_obs"], mode="compute_critic")["value"]
        data = gae_data(value * value_scale, next_value * value_scale, batch["reward"], batch["done"],
                        batch["traj_flag"])
        adv = gae(data, self._gamma, self._gae_lambda)
        return value, adv, value * value_scale + adv

    def _clip_grad(self, kind: str | None, value: float) -> float | None:
        """Clip the gradients by norm (``'clip_norm'``) or value (``'clip_value'``); the norm before clipping."""
        if kind is None:
            return None
        params = getattr(self, "_params", None)
        if params is None:
            params = self._params = list(self._model.parameters())
        self._sync_gradients(params)  # several learners: clip the group's mean gradient
        grads = [p.grad for p in params if p.grad is not None]
        if kind == "clip_value":
            torch._foreach_clamp_min_(grads, -value)
            torch._foreach_clamp_max_(grads, value)
            return None
        # torch.nn.utils.clip_grad_norm_'s math, without its per-call checks (they cost more than the math here)
        total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
        torch._foreach_mul_(grads, torch.clamp(value / (total + 1e-6), max=1.0))
        return float(total)

    # ------------------------------------------------------------------ collect
    def _init_collect(self) -> None:
        if int(self._cfg.collect.unroll_len) != 1:
            raise ConfigError(f"policy.collect.unroll_len: {type(self).__name__} trains on single transitions, so it "
                              f"must be 1 (got {self._cfg.collect.unroll_len})")
        self._obs_shape = model_obs_shape(self._model)

    def _forward_collect(self, data: dict[int, Any], **kwargs: Any) -> dict[int, dict[str, Any]]:
        """Actions sampled from the current policy (numpy's global RNG), with ``logit`` and ``value``."""
        if not data:
            return {}
        env_ids, obs = batch_obs(data, self._device, self._obs_shape, f"{type(self).__name__} collect_mode.forward")
        self._set_train(False)
        with torch.inference_mode():
            out = self._model(obs, mode="compute_actor_critic")
        value = out["value"].cpu().numpy()
        if self._continuous:
            mu, sigma = out["logit"]["mu"].cpu().numpy(), out["logit"]["sigma"].cpu().numpy()
            action = (mu + sigma * np.random.standard_normal(mu.shape)).astype(np.float32)
            return {env_id: {"action": action[i], "logit": {"mu": mu[i], "sigma": sigma[i]}, "value": value[i]}
                    for i, env_id in enumerate(env_ids)}
        logit = out["logit"].cpu().numpy()
        action = _sample_categorical(logit)
        return {env_id: {"action": action[i], "logit": logit[i], "value": value[i]} for i, env_id in enumerate(env_ids)}

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        """``done`` is termination only: a time-limit cut (``info['truncated']``) is bootstrapped from ``next_obs``."""
        done = bool(timestep.done) and not timestep.info.get("truncated", False)
        return {"obs": obs, "next_obs": timestep.obs, "action": policy_output["action"],
                "logit": policy_output["logit"], "value": policy_output["value"], "reward": timestep.reward,
                "done": done, "traj_flag": False}

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One segment of one env (the collector flushes at every episode end): its last step ends the GAE
        recursion (``traj_flag``)."""
        if transitions:
            transitions[-1]["traj_flag"] = True
        return transitions

    # ------------------------------------------------------------------ eval
    def _init_eval(self) -> None:
        self._obs_shape = model_obs_shape(self._model)

    def _forward_eval(self, data: dict[int, Any]) -> dict[int, dict[str, Any]]:
        """Deterministic actions: the most likely one (discrete) or the Gaussian's mean (continuous)."""
        if not data:
            return {}
        env_ids, obs = batch_obs(data, self._device, self._obs_shape, f"{type(self).__name__} eval_mode.forward")
        self._set_train(False)
        with torch.inference_mode():
            logit = self._model(obs, mode="compute_actor")["logit"]
        if self._continuous:
            action = logit["mu"].cpu().numpy()
        else:
            action = logit.argmax(dim=1).cpu().numpy()
        return {env_id: {"action": action[i]} for i, env_id in enumerate(env_ids)}


def _sample_categorical(logit: np.ndarray) -> np.ndarray:
    """One action per row of (B, A) logits by inverting the CDF with numpy's global RNG (int64)."""
    p = np.exp(logit - logit.max(axis=1, keepdims=True))
    cdf = np.cumsum(p, axis=1)
    u = np.random.random_sample((logit.shape[0], 1)) * cdf[:, -1:]
    return np.minimum((cdf < u).sum(axis=1), logit.shape[1] - 1).astype(np.int64)


def _to_device(x: Any, device: torch.device) -> Any:
    if isinstance(x, dict):
        return {k: _to_device(v, device) for k, v in x.items()}
    return x.to(device)


def minibatch_indices(n: int, batch_size: int) -> list[torch.Tensor]:
    """A random permutation of ``range(n)`` (torch's global RNG) cut into minibatches of ``batch_size``; the last
    one is short when ``batch_size`` does not divide ``n``, so every sample is in exactly one minibatch per epoch
    (DI-engine fills the last one up with samples already used, which gives those two updates per epoch)."""
    return list(torch.randperm(n).split(batch_size))


def index_batch(batch: dict[str, Any], idx: torch.Tensor) -> dict[str, Any]:
    """The rows ``idx`` of every tensor of ``batch`` (nested dicts such as Gaussian logits included)."""
    return {k: index_batch(v, idx) if isinstance(v, dict) else v[idx] for k, v in batch.items()}
