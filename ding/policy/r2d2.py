"""R2D2: a recurrent Q-network trained on stored sequences with burn-in, n-step double Q and value rescaling."""
from __future__ import annotations

from typing import Any, Mapping

import numpy as np
import torch

from ding.config.ranges import at_least, between
from ding.model import DRQN
from ding.rl_utils import q_nstep_sequence_td_error
from ding.torch_utils import obs_to_float
from ding.utils import POLICY_REGISTRY, ConfigError
from ding.utils.data import SAMPLE_BATCH_TYPES, stack_field

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

    How an item buffer's sequences are cut depends on ``replay_period``. ``None`` (the default, DI-engine's split):
    back to back from each chunk's start, so the first ``burnin_step`` steps of every sequence, episode starts among
    them, are never trained. An integer ``P`` (``1 <= P <= learn_unroll_len``, what ding's own configs use):
    sequences overlap like the R2D2 paper's. In episode step coordinates sequence ``k`` trains steps ``[kP, kP + L)``
    (``L = learn_unroll_len``) after burning in on ``[kP - burnin_step, kP)``; where that burn-in reaches before the
    episode's start it is padded at the front (masked: the LSTM state stays at the episode's zero start state), so
    the first sequence trains from step 0, and every step is trained in at least one sequence (in ``L / P`` of them
    away from the episode's ends). The collector keeps the last ``burnin_step + L - 1`` transitions of a chunk that
    did not end its episode for the next chunk (the ``nstep`` attribute it reads), so sequences span chunk borders.
    """

    _learn_takes_columns = True  # its learn step reads a ColumnBatch's columns (ding.utils.data.column_batch)

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
        # None: DI-engine's split (sequences back to back; the first burnin_step steps of each, episode starts
        # included, are never trained). An int P in [1, learn_unroll_len]: a new sequence every P steps of an
        # episode, overlapping (the R2D2 paper: P = learn_unroll_len / 2); the episode's first sequence trains from
        # step 0 (its burn-in is padded at the front), so every step is trained.
        replay_period=None,
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
        "replay_period": at_least(1, integer=True),
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
        period = cfg.get("replay_period")
        self._period: int | None = None if period is None else int(period)
        if self._period is not None and self._period > int(cfg.learn_unroll_len):
            raise ConfigError(f"policy.replay_period: {period} is longer than policy.learn_unroll_len "
                              f"{cfg.learn_unroll_len}, so the steps between two sequences' trained parts would never "
                              f"be trained; set replay_period <= {cfg.learn_unroll_len} (e.g. "
                              f"{max(1, int(cfg.learn_unroll_len) // 2)}, the R2D2 paper's half) or None")
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
        # Collectors keep `nstep - 1` transitions of a chunk that did not end its episode for the next chunk. R2D2's
        # n-step windows live inside its sequences (computed by the learner); DI-engine's split (and the sequence
        # buffer's windows) needs nothing from the previous chunk, overlapping sequences need up to unroll_len - 1.
        if name == "nstep":
            overlap = getattr(self, "_period", None) is not None and not getattr(self, "_from_windows", False)
            return self._unroll_len if overlap else 1
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
        with torch.no_grad():  # burn-in: unroll the stored state over the first b steps, no gradient
            state = _burn_in(self._model, batch["obs"][:, :b], batch["prev_state"], batch["mask"][:, :b])
            target_state = _burn_in(self._target_model, batch["obs"][:, :b], batch["prev_state"],
                                    batch["mask"][:, :b])
            target_q = self._target_model(batch["obs"][:, b:], target_state)["logit"]
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
        if not isinstance(data, SAMPLE_BATCH_TYPES) or len(data) == 0:
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
        batch = {k: stack_field(data, k) for k in keys}
        batch["done"], batch["mask"] = batch["done"].bool(), batch["mask"].bool()
        if self._device.type != "cpu":
            batch = {k: v.to(self._device) for k, v in batch.items()}
        batch["obs"] = obs_to_float(batch["obs"])  # uint8 pixels become float on the device
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
        """One env's chunk of transitions (never crossing an episode's end) -> sequences of ``unroll_len`` (see the
        class doc for how ``replay_period`` cuts them), or, for the ``sequence`` buffer, the transitions themselves
        with the chunk's first marked."""
        if self._from_windows:
            for i, t in enumerate(transitions):
                t["chunk_start"] = i == 0
            return list(transitions)
        T = self._unroll_len
        if self._period is None:
            return [self._pack(transitions[i:i + T], T) for i in range(0, len(transitions), T)]
        if not transitions:
            return []
        first_step, seen = _number_steps(transitions)
        last = transitions[-1]
        ends_episode = bool(last["done"]) or bool(last.get("truncated", False))
        samples = []
        for start, stop, front in overlapping_sequences(first_step, seen, len(transitions), ends_episode,
                                                        self._period, self._burnin, T - self._burnin):
            if start < first_step:
                raise ValueError(
                    f"{type(self).__name__} collect_mode.get_train_sample: the sequence of episode steps "
                    f"[{start}, {stop}) begins before this chunk (steps [{first_step}, {first_step + len(transitions)}"
                    f")); with policy.replay_period a chunk must start at its episode's start or repeat the last "
                    f"{T - 1} transitions of the previous chunk (SampleSerialCollector does this, reading the "
                    f"policy's 'nstep' attribute)")
            samples.append(self._pack(transitions[start - first_step:stop - first_step], T, front))
        return samples

    def _pack(self, transitions: list[dict[str, Any]], length: int, front: int = 0) -> dict[str, Any]:
        """Consecutive transitions of one episode -> a sequence of ``length`` steps: ``front`` padding steps, the
        transitions, then padding: ``obs`` (length + 1, ...) with the last transition's ``next_obs`` after them,
        ``action``, ``reward``, ``done``, ``mask`` (length,; False on padding), zeros on padding, and ``prev_state``
        (2, H), the LSTM state before the first transition."""
        n = len(transitions)
        first = np.asarray(transitions[0]["obs"])
        dtype = np.uint8 if first.dtype == np.uint8 else np.float32  # pixels stay uint8 in the buffer
        obs = np.zeros((length + 1, *first.shape), dtype)
        obs[front:front + n] = [t["obs"] for t in transitions]
        obs[front + n] = transitions[-1]["next_obs"]
        pad = (front, length - front - n)
        return {
            "obs": obs,
            "action": np.pad(np.asarray([t["action"] for t in transitions], np.int64).reshape(n), pad),
            "reward": np.pad(np.asarray([t["reward"] for t in transitions], np.float32).reshape(n), pad),
            "done": np.pad(np.asarray([t["done"] for t in transitions], bool), pad),
            "mask": (np.arange(length) >= front) & (np.arange(length) < front + n),
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


def _burn_in(model: Any, obs: torch.Tensor, state: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """The LSTM state after unrolling ``model`` from ``state`` (B, 2, H) over the burn-in observations ``obs``
    (B, b, ...). A sequence's leading steps that are not ``valid`` (B, b) are front padding (its burn-in reaches before
    its episode's start): the state stays as it is over them. One batched call when no sequence is padded."""
    b = obs.shape[1]
    if b == 0:
        return state
    padded = (~valid.bool()).long().cumprod(1).sum(1)  # leading padding steps of each sequence
    m = int(padded.max())
    for j in range(m):  # step by step only over the columns where some sequence is still padding
        stepped = model(obs[:, j:j + 1], state)["next_state"]
        state = torch.where((padded > j).view(-1, 1, 1), state, stepped)
    if m < b:
        state = model(obs[:, m:], state)["next_state"]
    return state


def _number_steps(transitions: list[dict[str, Any]]) -> tuple[int, int]:
    """Give each transition of a chunk its ``episode_step`` (its index in the episode) -> (the chunk's first episode
    step, how many leading transitions already had one: the ones the collector kept from the previous chunk). A chunk
    whose first transition has none starts its episode; one whose transitions all have one is cut again from scratch
    (the same transitions given twice, e.g. a whole episode)."""
    seen = 0
    while seen < len(transitions) and "episode_step" in transitions[seen]:
        seen += 1
    first = int(transitions[0]["episode_step"]) if seen else 0
    if seen == len(transitions):
        return first, 0
    for i in range(seen, len(transitions)):
        transitions[i]["episode_step"] = first + i
    return first, seen


def overlapping_sequences(first_step: int, seen: int, n: int, ends_episode: bool, period: int, burnin: int,
                          learn_len: int) -> list[tuple[int, int, int]]:
    """Which overlapping sequences a chunk completes: ``(start, stop, front)`` each, in episode steps.

    The chunk holds episode steps ``[first_step, first_step + n)``; its first ``seen`` were in the previous chunk
    (which did not end the episode and emitted every sequence whose trained part ``[kP, kP + learn_len)`` ended
    inside it). Sequence ``k`` (``P = period``) holds steps ``[start, stop)`` = ``[max(kP - burnin, 0),
    min(kP + learn_len, episode end))`` after ``front = max(burnin - kP, 0)`` padding steps; it is emitted by the
    chunk where its trained part is complete, or by the episode's last chunk (then padded at the end).
    """
    prev_end, end = first_step + seen, first_step + n
    k = 0 if prev_end < learn_len else (prev_end - learn_len) // period + 1
    out = []
    while k * period < end:
        begin = k * period
        if begin + learn_len > end and not ends_episode:
            break
        out.append((max(begin - burnin, 0), min(begin + learn_len, end), max(burnin - begin, 0)))
        k += 1
    return out

# DI-engine's config files name the command-mode twin 'r2d2_command'; here the command mode is part of the policy.
POLICY_REGISTRY.register("r2d2_command", R2D2Policy)
