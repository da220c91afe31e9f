"""The two serial training loops over one :class:`~ding.engine.serial_run.SerialRun`: off-policy and on-policy.

Both follow one skeleton (:meth:`TrainLoop.round`, SPEC section 6): train on what is there, check the stop
conditions, ``commander.step()``, evaluate when it is time, collect. They differ only in their two phases, as
Tianshou's trainers differ over one collector/policy set-up:

- off-policy: collect ``n_sample`` samples into the replay buffer; train ``update_per_collect`` times on batches
  sampled from it (with priority updates);
- on-policy: collect ``n_sample`` samples (or episodes) and train once on exactly them (``learner.train`` may count
  one iteration per minibatch); no replay buffer.

The train phase comes first in the loop so a resumed run re-enters it where its checkpoint was written: in the middle
of a collect cycle (off-policy), or with collected data not yet trained on (on-policy). Each loop's position is its
``state_dict``, saved in every checkpoint (``extra.loop``).
"""
from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ding.utils import CheckpointError, ConfigError
from ding.worker.collector.episode_callback import EpisodeCallback, call_callback

from .resume import Limits
from .serial_run import SerialRun
from .training_view import GracefulStop, ProgressView
from .warm_up import random_collect


@dataclass
class RoundOutcome:
    """What one round of a loop did: how the run ended in it (None: it goes on), whether the evaluator reached the
    stop value, whether it evaluated, and the time of each phase."""

    ended: str | None = None  # 'stop_value', 'limit', 'hook', 'interrupted' or None
    stop_flag: bool = False
    evaluated: bool = False
    train_time: float = 0.0
    eval_time: float = 0.0
    collect_time: float = 0.0


class TrainLoop:
    """The loop skeleton; subclasses fill :meth:`train_phase` and :meth:`collect_phase` and their loop state.

    :meth:`start` once, then :meth:`round` until it reports an end; :class:`~ding.entry.Trainer` drives it (and so
    do ``serial_pipeline`` and ``ding -m serial``, through the trainer).
    """

    kind = ""

    def __init__(self, run: SerialRun) -> None:
        self.run = run
        self.limits = Limits()
        self.stop_at_stop_value = True
        self.view: ProgressView | None = None
        # the round's learner outputs (one dict per iteration) and what on_learn_on_batch callbacks added
        self.learn_logs: list[Mapping[str, Any]] = []
        self.callback_result: dict[str, Any] = {}
        self._callbacks: list[Any] = []

    def start(self, limits: Limits, stop_at_stop_value: bool = True) -> None:
        """Before the first round: the limits, the progress view, and a resumed run's eval log cut back to its
        checkpoint."""
        run = self.run
        self.limits, self.stop_at_stop_value = limits, stop_at_stop_value
        self.view = ProgressView(max_env_step=limits.env_step, max_train_iter=limits.train_iter,
                                 stop_value=run.cfg.env.get("stop_value"))
        if run.resumed:  # rows the stopped session wrote after its checkpoint: the evaluator's last one is kept
            last_eval = run.evaluator.state_dict().get("last_eval_iter", run.learner.train_iter)
            run.eval_csv.truncate_after(min(last_eval, run.learner.train_iter))
        self._callbacks = [cb for cb in run.collector.callbacks
                           if type(cb).on_learn_on_batch is not EpisodeCallback.on_learn_on_batch]

    def round(self, stop: GracefulStop) -> RoundOutcome:
        """One round: {train phase → stop checks → commander → eval? → collect phase}.

        Stop requests (Ctrl-C/SIGTERM, a hook) are honoured at safe points only: after an update or after a collect,
        where the checkpoint describes a consistent state.
        """
        run = self.run
        learner, collector = run.learner, run.collector
        assert self.view is not None, "start() first"
        out = RoundOutcome()
        self.learn_logs, self.callback_result = [], {}
        t0 = time.perf_counter()
        self.train_phase(stop)
        t1 = time.perf_counter()
        out.train_time = t1 - t0
        self.view.update(collector.envstep, learner.train_iter)
        if stop.requested or learner.stop_requested:
            out.ended = "interrupted" if stop.requested else "hook"
            return out
        if collector.envstep >= self.limits.env_step or learner.train_iter >= self.limits.train_iter:
            out.ended = "limit"
            return out
        collect_kwargs = run.commander.step()
        if run.evaluator.should_eval(learner.train_iter):
            out.evaluated = True
            out.stop_flag = run.evaluate(self.view) and self.stop_at_stop_value
            t2 = time.perf_counter()
            out.eval_time = t2 - t1
            t1 = t2
            if out.stop_flag:
                out.ended = "stop_value"
                return out
        self.collect_phase(collect_kwargs)
        out.collect_time = time.perf_counter() - t1
        if stop.requested:
            out.ended = "interrupted"
        return out

    def _learn(self, data: Any) -> None:
        """``learner.train(data)`` with the ``on_learn_on_batch`` callbacks before it; its output is kept for the
        round's result."""
        learner = self.run.learner
        for cb in self._callbacks:
            call_callback(cb, "on_learn_on_batch", data, learner.train_iter, self.callback_result)
        output = learner.train(data, self.run.collector.envstep)
        if isinstance(output, Mapping):
            self.learn_logs.append(output)
        elif isinstance(output, list):
            self.learn_logs.extend(output)

    def train_phase(self, stop: GracefulStop) -> None:
        raise NotImplementedError

    def collect_phase(self, collect_kwargs: dict[str, Any]) -> None:
        raise NotImplementedError

    def state_dict(self) -> dict[str, Any]:
        raise NotImplementedError

    def load_state_dict(self, state: dict[str, Any], path: str) -> None:
        raise NotImplementedError

    def _check_kind(self, state: dict[str, Any], path: str) -> None:
        kind = state.get("kind", OffPolicyLoop.kind)  # checkpoints from before on-policy runs existed
        if kind != self.kind:
            mode = {"off_policy": "serial", "on_policy": "serial_onpolicy", "offline": "serial_offline"}.get(kind, kind)
            raise CheckpointError(f"resume: checkpoint '{path}' was written by the {kind.replace('_', '-')} loop; "
                                  f"resume it with the pipeline that wrote it (ding -m {mode})")


class OffPolicyLoop(TrainLoop):
    """Collect into the replay buffer; ``update_per_collect`` × (sample a batch → train → update priorities)."""

    kind = "off_policy"

    def __init__(self, run: SerialRun) -> None:
        super().__init__(run)
        cfg = run.cfg.policy
        if cfg.learn.get("batch_size") is None:
            raise ConfigError(f"policy.learn.batch_size: the off-policy loop samples batches of this size from the "
                              f"replay buffer, and policy type {cfg.get('type')!r} gives it no value; add it to the "
                              "policy class's config (config = dict(learn=dict(batch_size=64), ...)), which a run's "
                              "config can then change")
        self.update_per_collect = int(cfg.learn.update_per_collect)
        self.batch_size = int(cfg.learn.batch_size)
        self.use_priority = bool(cfg.get("priority", False))
        self.next_update = self.update_per_collect  # a new run starts with a collect
        self._updating: int | None = None  # index of the update inside learner.train right now

    def warm_up(self) -> None:
        """A new run's optional collect of ``policy.random_collect_size`` samples with random actions."""
        run = self.run
        if run.cfg.policy.get("random_collect_size", 0) <= 0:
            return
        random_collect(dict(run.cfg.policy, collect=dict(collector=dict(type="sample"))), run.policy, run.collector,
                       run.collector_env, None, run.buffer)

    def train_phase(self, stop: GracefulStop) -> None:
        learner, buffer = self.run.learner, self.run.buffer
        for i in range(self.next_update, self.update_per_collect):
            # warm-up: too few samples for a batch yet (quietly); any other refusal is logged by the buffer
            batch = buffer.sample(self.batch_size, learner.train_iter) if buffer.count() >= self.batch_size else None
            if batch is None:
                self.next_update = self.update_per_collect
                return
            self._updating = i
            self._learn(batch)
            if self.use_priority:
                buffer.update(learner.priority_info)
            self._updating, self.next_update = None, i + 1
            if stop.requested or learner.stop_requested:
                return

    def collect_phase(self, collect_kwargs: dict[str, Any]) -> None:
        run = self.run
        data = run.collector.collect(train_iter=run.learner.train_iter, policy_kwargs=collect_kwargs)
        run.buffer.push(data, cur_collector_envstep=run.collector.envstep)
        self.next_update = 0

    def state_dict(self) -> dict[str, Any]:
        if self._updating is not None:  # written by a hook inside learner.train: the update is done but the
            # buffer has not received its priorities yet
            pending = self.run.learner.priority_info if self.use_priority else None
            return {"kind": self.kind, "next_update": self._updating + 1, "pending_priority": pending}
        return {"kind": self.kind, "next_update": self.next_update, "pending_priority": None}

    def load_state_dict(self, state: dict[str, Any], path: str) -> None:
        self._check_kind(state, path)
        if state.get("pending_priority"):
            self.run.buffer.update(state["pending_priority"])
        self.next_update = int(state["next_update"])


class OnPolicyLoop(TrainLoop):
    """Collect fresh data; train once on exactly that data (the policy splits it into epochs and minibatches)."""

    kind = "on_policy"

    def __init__(self, run: SerialRun) -> None:
        super().__init__(run)
        self.pending: list[Any] | None = None  # collected, not trained on yet
        self._in_train = False

    def train_phase(self, stop: GracefulStop) -> None:
        if self.pending is None:
            return
        self._in_train = True
        self._learn(self.pending)
        self._in_train = False
        self.pending = None

    def collect_phase(self, collect_kwargs: dict[str, Any]) -> None:
        run = self.run
        self.pending = run.collector.collect(train_iter=run.learner.train_iter, policy_kwargs=collect_kwargs)

    def state_dict(self) -> dict[str, Any]:
        if self._in_train:  # a hook's checkpoint inside learner.train: the policy has done the whole update
            # already (hooks run after it), so the run continues after the train call, at its last iteration
            return {"kind": self.kind, "pending": None, "train_iter": self.run.learner.train_call_end_iter}
        return {"kind": self.kind, "pending": self.pending, "train_iter": None}

    def load_state_dict(self, state: dict[str, Any], path: str) -> None:
        self._check_kind(state, path)
        self.pending = state["pending"]
        if state.get("train_iter") is not None:
            self.run.learner.last_iter.update(int(state["train_iter"]))
