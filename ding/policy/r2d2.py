"""R2D2: a recurrent Q-network trained on stored sequences with burn-in, n-step double Q and value rescaling."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import torch

from ding.config.ranges import at_least, between
from ding.model import DRQN
from ding.rl_utils import q_nstep_sequence_td_error
from ding.torch_utils import default_collate
from ding.utils import POLICY_REGISTRY, ConfigError

from .common_utils import batch_obs, model_obs_shape
from .dqn import DQNPolicy, epsilon_greedy

_SEQUENCE_KEYS = ("obs", "action", "reward", "done", "mask", "prev_state")


@POLICY_REGISTRY.register("r2d2")
class R2D2Policy(DQNPolicy):
    """R2D2 (Kapturowski et al. 2019) in one process: an LSTM Q-network learns from sequences of ``unroll_len =
    burnin_step + learn_unroll_len`` transitions that start from the hidden state stored when they were collected.

    The first ``burnin_step`` steps only warm the online state up (no gradient); every later step gets an n-step
    double-Q target (the online network picks, the target network values) under value rescaling ``h``; windows
    stop at a termination and at the sequence's last step (a shorter window bootstraps from its own last
    ``next_obs``, so time-limit truncation bootstraps correctly). A sequence's priority is ``eta * max|td| +
    (1 - eta) * mean|td|``.

    Where sequences come from depends on the replay buffer: an item buffer (``advanced``, the default, or
    ``naive``) stores the sequences ``get_train_sample`` cuts from each trajectory chunk (padded at an episode's end,
    with a mask); the ``sequence`` buffer stores transitions and returns windows of its ``sequence_len``, cut short
    where the window leaves its trajectory chunk or episode.
    """

    _model: DRQN  # or a recurrent model with its interface (hidden_size, forward(obs, prev_state))
    _collect_state: dict[int, torch.Tensor]  # each collecting env's LSTM state

    config = dict(
        type="r2d2",
        priority=True,
        priority_IS_weight=True,
        # Sequence priority = eta * max |td| + (1 - eta) * mean |td| over its trained steps.
        priority_eta=0.9,
        discount_factor=0.997,
        nstep=5,
        # Steps at the start of each sequence that only warm the LSTM state up.
        burnin_step=2,
        # Trained steps per sequence; a sequence holds burnin_step + learn_unroll_len transitions.
        learn_unroll_len=40,
        model=dict(),
        learn=dict(
            update_per_collect=1,
            batch_size=64,
            learning_rate=0.0005,
            # Soft target updates by default (target <- (1 - theta) * target + theta * online every step).
            target_update_freq=0,
            # DI-engine's name of the soft-update rate; used when target_theta is None.
            target_update_theta=0.001,
            target_theta=None,
            # Train on h(target) with the invertible value rescaling h (R2D2); False: plain n-step targets.
            value_rescale=True,
        ),
        collect=dict(
            # Sequences per collect call.
            n_sample=32,
            # Transitions per sequence: None (or burnin_step + learn_unroll_len, the only other accepted value).
            unroll_len=None,
            # Accepted for DI-engine's files and ignored: every sequence stores its start state, so trajectory chunks
            # of any length give valid sequences.
            traj_len_inf=False,
            # Accepted for DI-engine's files and ignored: the env count is env.collector_env_num.
            env_num=None,
        ),
        eval=dict(
            # Accepted for DI-engine's files and ignored: the env count is env.evaluator_env_num.
            env_num=None,
        ),
        other=dict(
            eps=dict(type="exp", start=0.95, end=0.05, decay=10000),
            replay_buffer=dict(replay_buffer_size=10000),
        ),
    )
    config_ranges = {
        **DQNPolicy.config_ranges,
        "priority_eta": between(0, 1),
        "burnin_step": at_least(0, integer=True),
        "learn_unroll_len": at_least(1, integer=True),
        "learn.target_update_theta": between(0, 1),
    }

    def default_model(self) -> tuple[str, list[str]]:
        return "drqn", ["ding.model.template.q_learning"]

    def _sequence_layout(self) -> None:
        """Read and check the sequence settings (shared by the learn and collect modes)."""
        cfg = self._cfg
        self._burnin = int(cfg.burnin_step)
        self._unroll_len = self._burnin + int(cfg.learn_unroll_len)
        given = cfg.collect.get("unroll_len")
        if given not in (None, self._unroll_len):
            raise ConfigError(f"policy.collect.unroll_len: {given} does not match burnin_step + learn_unroll_len = "
                              f"{cfg.burnin_step} + {cfg.learn_unroll_len} = {self._unroll_len}; set it to "
                              f"{self._unroll_len} or leave it out")
        cfg.collect.unroll_len = self._unroll_len  # the collector sizes its trajectory chunks by it
        buffer_cfg = cfg.other.get("replay_buffer") or {}
        self._from_windows = buffer_cfg.get("type") == "sequence"
        if self._from_windows:
            seq_len = buffer_cfg.get("sequence_len")
            if seq_len is None or seq_len < self._unroll_len:
                raise ConfigError(
                    f"policy.collect.unroll_len: {self._unroll_len} (burnin_step {self._burnin} + learn_unroll_len "
                    f"{cfg.learn_unroll_len}) is longer than the sequence buffer's sequences "
                    f"(policy.other.replay_buffer.sequence_len={seq_len}); set sequence_len={self._unroll_len} or "
                    f"shorten burnin_step / learn_unroll_len")

    def _get_attribute(self, name: str) -> Any:
        # Collectors keep `nstep - 1` transitions between chunks for n-step windows; R2D2's windows live inside its
        # sequences (computed by the learner), so its samples never need transitions from the next chunk.
        if name == "nstep":
            return 1
        return super()._get_attribute(name)

    # ------------------------------------------------------------------ learn
    def _init_learn(self) -> None:
        self._sequence_layout()
        learn = self._cfg.learn
        if learn.target_theta is None:
            learn.target_theta = learn.target_update_theta
        super()._init_learn()
        self._eta = float(self._cfg.priority_eta)
        self._value_rescale = bool(learn.value_rescale)

    def _forward_learn(self, data: list[Any]) -> dict[str, Any]:
        """One R2D2 gradient step on a list of sequences; ``'priority'`` (when ``priority``) is one value each."""
        batch = self._collate(data)
        self._set_train(True)
        b = self._burnin
        with torch.no_grad():
            state = batch["prev_state"]
            if b:  # burn-in: unroll the stored state over the first b steps, no gradient
                state = self._model(batch["obs"][:, :b], state)["next_state"]
            target_q = self._target_model(batch["obs"], batch["prev_state"])["logit"][:, b:]
        q = self._model(batch["obs"][:, b:], state)["logit"]  # (B, T + 1 - b, A): steps b..T-1 and the last next_obs
        boot_action = q.detach().argmax(dim=-1)  # double Q: the online network picks, the target network values
        boot_value = target_q.gather(-1, boot_action.unsqueeze(-1)).squeeze(-1)
        done = torch.zeros_like(batch["done"]) if self._ignore_done else batch["done"]
        mask = batch["mask"][:, b:]
        loss, td = q_nstep_sequence_td_error(q[:, :-1], boot_value, batch["action"][:, b:], batch["reward"][:, b:],
                                             done[:, b:], mask, self._gamma, self._nstep, self._value_rescale,
                                             batch.get("IS"))
        self._optimize(loss)

        abs_td, n_steps = td.abs(), mask.sum(1).clamp_min(1)
        output = {
            "cur_lr": self._optimizer.param_groups[0]["lr"],
            "total_loss": loss.item(),
            "q_value": (q.detach()[:, :-1].max(-1).values * mask).sum().item() / n_steps.sum().item(),
            "td_error": abs_td.sum().item() / n_steps.sum().item(),
        }
        if self._priority:
            mixed = self._eta * abs_td.max(1).values + (1 - self._eta) * abs_td.sum(1) / n_steps
            output["priority"] = mixed.cpu().numpy()
        return output

    def _collate(self, data: list[Any]) -> dict[str, torch.Tensor]:
        """Sequences (dicts from ``get_train_sample``) or windows (lists of transitions from the ``sequence`` buffer)
        -> tensors ``obs`` (B, T + 1, ...), ``action``/``reward``/``done``/``mask`` (B, T), ``prev_state`` (B, 2, H)
        and ``IS`` when weighted."""
        where = f"{type(self).__name__} learn_mode.forward"
        if not isinstance(data, (list, tuple)) or len(data) == 0:
            raise ValueError(f"{where}: expected a non-empty list of sequences, got {type(data).__name__} {data!r:.60}")
        if isinstance(data[0], (list, tuple)):
            data = [self._pack(window[:_continuous_length(window)], len(window)) for window in data]
        keys = list(_SEQUENCE_KEYS) + (["IS"] if self._priority_IS_weight else [])
        missing = [k for k in keys if k not in data[0]]
        if missing:
            hint = (" ('IS' comes from a prioritized buffer: use the 'advanced' buffer with policy.priority=True, or "
                    "set policy.priority_IS_weight=False)" if "IS" in missing else
                    " (sequences must come from R2D2's collect_mode.get_train_sample)")
            raise ValueError(f"{where}: samples lack key(s) {missing}; they have {sorted(data[0].keys())}{hint}")
        batch = {k: default_collate([d[k] for d in data]) for k in keys}
        batch["obs"] = batch["obs"].float()
        batch["done"], batch["mask"] = batch["done"].bool(), batch["mask"].bool()
        if self._device.type != "cpu":
            batch = {k: v.to(self._device) for k, v in batch.items()}
        return batch

    def _state_dict_learn(self) -> dict[str, Any]:
        """DQN's state plus ``collect_state``: each collecting env's LSTM state, so a resumed run acts exactly as
        the stopped one would have."""
        return {**super()._state_dict_learn(), "collect_state": dict(getattr(self, "_collect_state", {}))}

    def _load_state_dict_learn(self, state_dict: Mapping[str, Any]) -> None:
        super()._load_state_dict_learn(state_dict)
        if "collect_state" in state_dict:
            self._collect_state = {int(k): v.clone() for k, v in state_dict["collect_state"].items()}

    # ------------------------------------------------------------------ collect
    def _init_collect(self) -> None:
        self._sequence_layout()
        self._gamma = float(self._cfg.discount_factor)
        self._obs_shape = model_obs_shape(self._model)
        self._collect_state = getattr(self, "_collect_state", {})

    def _recurrent_q(self, data: dict[int, Any], states: dict[int, torch.Tensor],
                     where: str) -> tuple[list[int], np.ndarray, torch.Tensor]:
        """One batched LSTM step from each env's state (zeros for a new episode); updates ``states`` in place and
        returns (env_ids, Q-values (B, A), the states the step started from (B, 2, H))."""
        env_ids, obs = batch_obs(data, self._device, self._obs_shape, where)
        zeros = torch.zeros(2, self._model.hidden_size, device=self._device)
        prev = torch.stack([states.get(env_id, zeros) for env_id in env_ids])
        self._set_train(False)
        with torch.inference_mode():
            out = self._model(obs, prev)
        for i, env_id in enumerate(env_ids):
            states[env_id] = out["next_state"][i]
        return env_ids, out["logit"].cpu().numpy(), prev

    def _forward_collect(self, data: dict[int, Any], eps: float | None = None) -> dict[int, dict[str, Any]]:
        """Epsilon-greedy actions plus ``'prev_state'``, the (2, H) LSTM state each env's step started from."""
        eps = self._check_eps(eps)
        if not data:
            return {}
        env_ids, logit, prev = self._recurrent_q(data, self._collect_state, f"{type(self).__name__} collect_mode")
        action = epsilon_greedy(logit, eps)
        prev_state = prev.cpu().numpy()
        return {env_id: {"action": action[i], "logit": logit[i], "prev_state": prev_state[i]}
                for i, env_id in enumerate(env_ids)}

    def _reset_collect(self, data_id: list[int] | None = None) -> None:
        _forget(self._collect_state, data_id)

    def _process_transition(self, obs: Any, policy_output: dict[str, Any], timestep: Any) -> dict[str, Any]:
        """DQN's transition plus ``prev_state`` (zeros when the output has none, e.g. from a random warm-up
        policy)."""
        transition = super()._process_transition(obs, policy_output, timestep)
        prev = policy_output.get("prev_state")
        transition["prev_state"] = np.zeros((2, self._model.hidden_size), np.float32) if prev is None else prev
        return transition

    def _get_train_sample(self, transitions: list[dict[str, Any]]) -> list[Any]:
        """One env's chunk of transitions (never crossing an episode's end) -> sequences of ``unroll_len`` (the last
        one padded), or, for the ``sequence`` buffer, the transitions themselves with the chunk's first marked."""
        if self._from_windows:
            for i, t in enumerate(transitions):
                t["chunk_start"] = i == 0
            return list(transitions)
        T = self._unroll_len
        return [self._pack(transitions[i:i + T], T) for i in range(0, len(transitions), T)]

    def _pack(self, transitions: list[dict[str, Any]], length: int) -> dict[str, Any]:
        """Consecutive transitions of one episode -> a sequence of ``length`` steps: ``obs`` (length + 1, ...) with the
        last transition's ``next_obs`` after them, ``action``, ``reward``, ``done``, ``mask`` (length,), zero-padded,
        and ``prev_state`` (2, H), the LSTM state before the first step."""
        n = len(transitions)
        first = np.asarray(transitions[0]["obs"], dtype=np.float32)
        obs = np.zeros((length + 1, *first.shape), np.float32)
        obs[:n] = [t["obs"] for t in transitions]
        obs[n] = transitions[-1]["next_obs"]
        pad = length - n
        return {
            "obs": obs,
            "action": np.pad(np.asarray([t["action"] for t in transitions], np.int64).reshape(n), (0, pad)),
            "reward": np.pad(np.asarray([t["reward"] for t in transitions], np.float32).reshape(n), (0, pad)),
            "done": np.pad(np.asarray([t["done"] for t in transitions], bool), (0, pad)),
            "mask": np.arange(length) < n,
            "prev_state": np.asarray(transitions[0]["prev_state"], np.float32),
            "collect_iter": transitions[0].get("collect_iter", 0),
        }

    # ------------------------------------------------------------------ eval
    def _init_eval(self) -> None:
        self._obs_shape = model_obs_shape(self._model)
        self._eval_state: dict[int, torch.Tensor] = {}

    def _forward_eval(self, data: dict[int, Any]) -> dict[int, dict[str, Any]]:
        """Greedy actions from each env's own LSTM state."""
        if not data:
            return {}
        env_ids, logit, _ = self._recurrent_q(data, self._eval_state, f"{type(self).__name__} eval_mode")
        action = logit.argmax(axis=1)
        return {env_id: {"action": action[i], "logit": logit[i]} for i, env_id in enumerate(env_ids)}

    def _reset_eval(self, data_id: list[int] | None = None) -> None:
        _forget(self._eval_state, data_id)


def _forget(states: dict[int, torch.Tensor], data_id: list[int] | None) -> None:
    """Drop the LSTM states of ``data_id`` (all when None): those envs start a new episode from zeros."""
    if data_id is None:
        states.clear()
    else:
        for env_id in data_id:
            states.pop(env_id, None)


def _continuous_length(window: list[dict[str, Any]]) -> int:
    """How many leading transitions of a ``sequence`` buffer window follow each other: the window stops after an
    episode's end and before the start of another trajectory chunk (another env, or a later chunk)."""
    for i, t in enumerate(window):
        if i and t.get("chunk_start", False):
            return i
        if t["done"] or t.get("truncated", False):
            return i + 1
    return len(window)
