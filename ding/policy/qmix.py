"""QMIX and VDN (policy type ``qmix``): recurrent agent Q-networks, mixed into a team Q-value, trained on sequences.

One update (``_forward_learn``) on a batch of sequences of ``unroll_len`` steps, each starting from the GRU state
stored when it was collected:

    q_a(t)     = Q_a(o_a(t), h_a(t))                              online network, agents share the weights
    Q_tot(t)   = mix(q_a(t)[u_a(t)], s(t))                        QMIX hypernetwork (mixer=True) or sum (VDN)
    u'_a       = argmax over available actions of q_a(t+1)        double Q (double_q); else the target's own argmax
    y(t)       = r(t) + gamma * (1 - done(t)) * mix'(q'_a(t+1)[u'_a], s(t+1))   target network
    loss       = sum over steps with mask=1 of (Q_tot(t) - y(t))^2 / sum(mask)

``done`` is termination only: the last step of an episode cut at ``max_cycles`` bootstraps from the final
observation (stored as the sequence's last ``obs``). Padded steps (``mask=0``) add nothing to the loss; unavailable
actions (``action_mask=0``) are never chosen, neither by the argmax nor by exploration.
"""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import torch

from ding.config.ranges import at_least, between
from ding.model.template.mavac import mask_logit
from ding.utils import POLICY_REGISTRY, ConfigError
from ding.utils.data import SAMPLE_BATCH_TYPES, default_collate

from .dqn import DQNPolicy
from .multi_agent_data import batch_agent_obs, masked_epsilon_greedy, stack_obs_dicts

_SEQ_KEYS = ("action", "reward", "done", "mask", "prev_state")


@POLICY_REGISTRY.register("qmix")
class QMIXPolicy(DQNPolicy):
    """QMIX (Rashid et al. 2018) with ``model.mixer=True``, VDN (Sunehag et al. 2018) with ``mixer=False``, on a
    ``QMix`` model; epsilon-greedy per agent, epsilon from ``command_mode``."""

    _learn_takes_columns = False
    _target_model: Any
    _model: Any  # QMix, or a model with its interface (agent_q, mix, hidden_size)

    config = dict(
        type="qmix",
        # Accepted for DI-engine configs: QMIX trains off-policy from the replay buffer (False only).
        on_policy=False,
        priority=False,
        priority_IS_weight=False,
        # Accepted for DI-engine's VDN file (the agent count is policy.model.agent_num).
        agent_num=None,
        discount_factor=0.99,
        nstep=1,
        # QMix kwargs: agent_num, obs_shape, global_obs_shape, action_shape, hidden_size_list, mixer.
        model=dict(),
        learn=dict(
            update_per_collect=20,
            batch_size=32,
            learning_rate=0.0005,
            # Hard target update every this many steps; 0: soft updates at rate target_update_theta.
            target_update_freq=0,
            # DI-engine's name of the soft target update rate (target_theta: the same, used when set).
            target_update_theta=0.008,
            target_theta=None,
            # DI-engine's discount key inside learn (used when set; else policy.discount_factor).
            discount_factor=None,
            # Double Q: the online network picks the next actions, the target network values them.
            double_q=True,
            # Accepted for DI-engine configs; ignored (no gradient clipping).
            clip_value=100.0,
            ignore_done=False,
        ),
        collect=dict(
            # Sequences per collect call.
            n_sample=32,
            # Steps per training sequence (episodes are cut into sequences of this length, the last one padded).
            unroll_len=16,
            # Accepted for DI-engine configs; the env count is env.collector_env_num.
            env_num=None,
        ),
        eval=dict(env_num=None),
        other=dict(
            eps=dict(type="exp", start=1.0, end=0.05, decay=50000),
            replay_buffer=dict(replay_buffer_size=5000),
        ),
    )
    config_ranges = {
        **DQNPolicy.config_ranges,
        "collect.unroll_len": at_least(1, integer=True),
        "learn.target_update_theta": between(0, 1),
    }
    action_space_types = None  # type: ignore[assignment]  # a Dict of the agents' Discrete spaces (checked by ding.policy.multi_agent_data)
    multi_agent = True

    def default_model(self) -> tuple[str, list[str]]:
        return "qmix", ["ding.model.template.qmix"]

    def _get_attribute(self, name: str) -> Any:
        if name == "nstep":  # sequences are cut from each trajectory chunk: nothing kept from the previous one
            return 1
        return super()._get_attribute(name)

    # ------------------------------------------------------------------ learn
    def _init_learn(self) -> None:
        learn = self._cfg.learn
        if learn.target_theta is None:
            learn.target_theta = learn.target_update_theta
        if learn.discount_factor is not None:
            self._cfg.discount_factor = learn.discount_factor
        if self._cfg.priority or self._cfg.nstep != 1:
            raise ConfigError("policy.priority / policy.nstep: ding's QMIX trains on uniformly sampled sequences with "
                              "one-step targets; set priority=False and nstep=1")
        super()._init_learn()
        self._double_q = bool(learn.double_q)

    def _forward_learn(self, data: list[Any]) -> dict[str, Any]:
        b = self._collate_sequences(data)
        self._set_train(True)
        obs, mask = b["obs"], b["mask"]
        agent_state, state, avail = obs["agent_state"], obs["global_state"], obs.get("action_mask")
        q, _ = self._model.agent_q(agent_state, b["prev_state"])  # (B, T + 1, A, n)
        chosen = q[:, :-1].gather(-1, b["action"].unsqueeze(-1)).squeeze(-1)
        total = self._model.mix(chosen, state[:, :-1])
        with torch.no_grad():
            target_q, _ = self._target_model.agent_q(agent_state, b["prev_state"])
            next_avail = None if avail is None else avail[:, 1:]
            picker = q.detach() if self._double_q else target_q
            next_action = mask_logit(picker[:, 1:], next_avail).argmax(-1, keepdim=True)
            next_q = target_q[:, 1:].gather(-1, next_action).squeeze(-1)
            target_total = self._target_model.mix(next_q, state[:, 1:])
            done = torch.zeros_like(b["done"]) if self._ignore_done else b["done"]
            target = b["reward"] + self._gamma * (1.0 - done) * target_total
        td = (total - target) * mask
        loss = td.pow(2).sum() / mask.sum().clamp_min(1.0)
        self._optimize(loss)
        n = mask.sum().item()
        return {"cur_lr": self._optimizer.param_groups[0]["lr"], "total_loss": loss.item(),
                "q_value": (total.detach() * mask).sum().item() / max(n, 1.0),
                "td_error": td.detach().abs().sum().item() / max(n, 1.0)}

    def _collate_sequences(self, data: list[Any]) -> dict[str, Any]:
        where = f"{type(self).__name__} learn_mode.forward"
        if not isinstance(data, SAMPLE_BATCH_TYPES) or len(data) == 0:
            raise ValueError(f"{where}: expected a non-empty list of sequences, got {type(data).__name__}")
        missing = [k for k in ("obs", *_SEQ_KEYS) if k not in data[0]]
        if missing:
            raise ValueError(f"{where}: samples lack key(s) {missing}; they have {sorted(data[0])} (sequences must "
                             f"come from {type(self).__name__}'s collect_mode.get_train_sample)")
        batch = {k: default_collate([d[k] for d in data]) for k in ("obs", *_SEQ_KEYS)}
        n = len(data)  # default_collate drops a length-1 axis: (B, T) and (B, T, A) again, for T = 1 too
        batch["action"] = batch["action"].long().reshape(n, -1, batch["action"].shape[-1])
        for k in ("reward", "done", "mask"):
            batch[k] = batch[k].float().reshape(n, -1)
        if self._device.type != "cpu":
            batch = _to(batch, self._device)
        return batch

    # ------------------------------------------------------------------ collect
    def _init_collect(self) -> None:
        self._unroll_len = int(self._cfg.collect.unroll_len)
        self._collect_state: dict[int, torch.Tensor] = getattr(self, "_collect_state", {})

    def _recurrent_q(self, data: dict[int, Any], states: dict[int, torch.Tensor],
                     where: str) -> tuple[list[int], np.ndarray, np.ndarray | None, np.ndarray]:
        env_ids, obs = batch_agent_obs(data, self._device, self._model, where)
        zeros = torch.zeros(self._model.agent_num, self._model.hidden_size, device=self._device)
        prev = torch.stack([states.get(i, zeros) for i in env_ids])
        self._set_train(False)
        with torch.inference_mode():
            q, nxt = self._model.agent_q(obs["agent_state"].unsqueeze(1), prev)
        for k, env_id in enumerate(env_ids):
            states[env_id] = nxt[k]
        mask = obs.get("action_mask")
        return env_ids, q[:, 0].cpu().numpy(), None if mask is None else mask.cpu().numpy(), prev.cpu().numpy()

    def _forward_collect(self, data: dict[int, Any], eps: float | None = None) -> dict[int, dict[str, Any]]:
        """Per-agent epsilon-greedy actions over the available ones, with the GRU state the step started from."""
        eps = self._check_eps(eps)
        if not data:
            return {}
        env_ids, q, avail, prev = self._recurrent_q(data, self._collect_state, f"{type(self).__name__} collect_mode")
        action = masked_epsilon_greedy(q, avail, eps)
        return {env_id: {"action": action[i], "prev_state": prev[i]} for i, env_id in enumerate(env_ids)}

    def _reset_collect(self, data_id: list[int] | None = None) -> None:
        _forget(self._collect_state, data_id)

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        transition = super()._process_transition(obs, policy_output, timestep)
        prev = policy_output.get("prev_state")  # None from a random warm-up policy: a fresh state
        transition["prev_state"] = np.zeros((self._model.agent_num, self._model.hidden_size), np.float32) \
            if prev is None else prev
        return transition

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[Any]:
        """One env's chunk (never crossing an episode's end) -> sequences of ``unroll_len`` steps, the last padded:
        ``obs`` (T + 1, ...) ending with the last step's ``next_obs``, ``action`` (T, A), ``reward``, ``done``,
        ``mask`` (T,), and ``prev_state`` (A, H), the GRU state before the first step."""
        T = self._unroll_len
        return [pack_sequence(transitions[i:i + T], T) for i in range(0, len(transitions), T)]

    # ------------------------------------------------------------------ eval
    def _init_eval(self) -> None:
        self._eval_state: dict[int, torch.Tensor] = {}

    def _forward_eval(self, data: dict[int, Any]) -> dict[int, dict[str, Any]]:
        if not data:
            return {}
        env_ids, q, avail, _ = self._recurrent_q(data, self._eval_state, f"{type(self).__name__} eval_mode")
        action = masked_epsilon_greedy(q, avail, 0.0)
        return {env_id: {"action": action[i]} for i, env_id in enumerate(env_ids)}

    def _reset_eval(self, data_id: list[int] | None = None) -> None:
        _forget(self._eval_state, data_id)

    def _state_dict_learn(self) -> dict[str, Any]:
        """DQN's state plus each collecting env's GRU state (exact resume)."""
        return {**super()._state_dict_learn(), "collect_state": dict(getattr(self, "_collect_state", {}))}

    def _load_state_dict_learn(self, state_dict: Mapping[str, Any]) -> None:
        super()._load_state_dict_learn(state_dict)
        if "collect_state" in state_dict:
            self._collect_state = {int(k): v.clone() for k, v in state_dict["collect_state"].items()}


def pack_sequence(transitions: list[dict[str, Any]], length: int) -> dict[str, Any]:
    """Consecutive transitions of one episode -> one sequence of ``length`` steps padded at the end (mask 0)."""
    n = len(transitions)
    obs = [t["obs"] for t in transitions] + [transitions[-1]["next_obs"]]
    obs += [obs[-1]] * (length - n)  # padding repeats the last observation (masked out of the loss)
    first_action = np.asarray(transitions[0]["action"], np.int64)
    action = np.zeros((length, *first_action.shape), np.int64)
    action[:n] = [np.asarray(t["action"], np.int64) for t in transitions]
    pad = (0, length - n)
    return {
        "obs": stack_obs_dicts(obs),
        "action": action,
        "reward": np.pad(np.asarray([np.sum(t["reward"]) for t in transitions], np.float32), pad),
        "done": np.pad(np.asarray([t["done"] for t in transitions], bool), pad),
        "mask": np.arange(length) < n,
        "prev_state": np.asarray(transitions[0]["prev_state"], np.float32),
    }


def _forget(states: dict[int, torch.Tensor], data_id: list[int] | None) -> None:
    if data_id is None:
        states.clear()
    else:
        for env_id in data_id:
            states.pop(env_id, None)


def _to(x: Any, device: torch.device) -> Any:
    return {k: _to(v, device) for k, v in x.items()} if isinstance(x, dict) else x.to(device)
