"""SoloCommander: one policy trained by one learner on data from any number of collectors (single-agent RL)."""
from __future__ import annotations

import bisect
import copy
import itertools
import math
import secrets
import threading
import time
from collections.abc import Mapping
from typing import Any

from ding.config.ranges import at_least, check_batch_fits_buffer, greater_than
from ding.parallel.commanders.base import BaseCommander, LimitedSpaceContainer
from ding.parallel.commanders.pacing import EVAL_LEAD, Pacing
from ding.parallel.protocol import (
    COLLECT_TASK_PREFIX,
    CollectResult,
    CollectTask,
    CommanderState,
    CommanderStatus,
    EvalRecord,
    EvalResult,
    EvalTask,
    LearnerClosed,
    LearnerSlot,
    LearnerStarted,
    LearnInfo,
)
from ding.utils import COMMANDER_REGISTRY, ConfigError

_uid = itertools.count()


@COMMANDER_REGISTRY.register("solo")
class SoloCommander(BaseCommander):
    """Collect tasks paced to the serial replay ratio (:mod:`.pacing`) and an evaluation task every ``eval_freq``
    train iterations or ``eval_interval`` seconds; the run ends at ``env.stop_value`` (docs/parallel.md, Pacing)."""

    config = dict(
        BaseCommander.config,  # collector_task_space, learner_task_space, eval_interval
        learner_iter_per_sample=None,  # pacing; None: update_per_collect / n_sample, 0: no pacing
    )

    # checked when the config compiles (ding/config/ranges.py, with BaseCommander's); None: "derived", never checked
    config_ranges = {
        "eval_interval": greater_than(0),
        "learner_iter_per_sample": at_least(0),
    }

    def __init__(self, cfg: Any) -> None:
        super().__init__(cfg)
        from ding.policy import create_policy

        self._commander_cfg = cfg.policy.other.commander
        # collect task ids name the data files; a resumed run's coordinator counts from 0 again, so its ids carry a
        # tag of their own and never name (and overwrite) the files the saved replay buffer refers to
        self._session = secrets.token_hex(4)
        if cfg.policy.get("on_policy", False):
            raise ConfigError(f"policy.type {cfg.policy.type!r} is on-policy; parallel mode trains off-policy "
                              "algorithms so far (its learner replays from a buffer): use ding -m serial_onpolicy")
        collect = cfg.policy.collect
        self._n_sample = collect.get("n_sample")
        if not isinstance(self._n_sample, int) or self._n_sample <= 0:
            raise ConfigError(f"policy.collect.n_sample: parallel mode sizes collector tasks by n_sample, which must "
                              f"be a positive int (got {self._n_sample!r})")
        learn = cfg.policy.learn
        ratio = self._commander_cfg.get("learner_iter_per_sample")  # its range is declared in config_ranges
        ratio = float(learn.get("update_per_collect", 1)) / self._n_sample if ratio is None else float(ratio)
        # settings under which the learner could never get a batch: the run would wait for ever, not fail
        check_batch_fits_buffer(cfg)
        self._stop_value = float(cfg.env.get("stop_value", math.inf))
        self.stop_at_stop_value = True  # False: an extended run (--resume --extend) ends only at its limits
        self._eval_freq = int(cfg.policy.eval.evaluator.get("eval_freq", 1000))
        self._eval_interval = float(self._commander_cfg.get("eval_interval", 60))
        self._pacing = Pacing(ratio, int(learn.batch_size), self._n_sample, None, EVAL_LEAD * self._eval_freq)
        self._evaluating: set[str] = set()  # task ids of the evaluations running
        self._failed_evals = 0  # evaluations whose task failed: the next free collectors run them again
        space = self._commander_cfg.get("collector_task_space")
        self._fixed_space = space is not None
        self._collector_space = LimitedSpaceContainer(0, space if space is not None else 0)
        self._learner_space = LimitedSpaceContainer(0, int(self._commander_cfg.get("learner_task_space", 1)))
        self._command = create_policy(copy.deepcopy(cfg.policy), enable_field=["command"]).command_mode
        self._lock = threading.RLock()
        self._collectors = 0
        self._learner_step = 0
        self._policy_iter = -1  # newest published policy; -1: none yet (collectors wait for it)
        self._envstep = 0
        self._handed_policy = -1  # newest published policy when the last evaluation was handed out
        self._last_eval_iter: float = -math.inf
        self._last_eval_time = 0.0
        self._evaluated_policy = -1
        # (published policy iteration, env steps collected by then), ascending: an evaluation is recorded at the env
        # steps its policy was trained with, as in serial mode (not at the later count when its result arrives)
        self._published: list[tuple[int, int]] = []
        self._best_return = -math.inf
        self._end_reason: str | None = None
        self._buffer_id = "buffer0"
        self._policy_id = "policy"

    # ---------------------------------------------------------------- learner
    def get_learner_task(self) -> LearnerSlot | None:
        with self._lock:
            if self._end_reason is not None or not self._learner_space.acquire_space():
                return None
            return LearnerSlot(task_id=f"learner_task_{next(_uid)}", buffer_id=self._buffer_id,
                               policy_id=self._policy_id)

    def finish_learner_task(self, task_id: str, finished_task: LearnerClosed) -> str:
        self._learner_space.release_space()
        return self._buffer_id

    def notify_fail_learner_task(self, task: LearnerSlot) -> None:
        self._learner_space.release_space()

    def update_learner_info(self, task_id: str, info: LearnInfo) -> None:
        with self._lock:
            self._learner_step = max(self._learner_step, info.learner_step)
            if info.policy_iter > self._policy_iter:
                self._publish(info.policy_iter)
            if self._learner_step >= self.max_train_iter and self._end_reason is None:
                self._end_reason = f"reached max_train_iter ({self.max_train_iter:g})"

    def learner_started(self, task_id: str, info: LearnerStarted) -> None:
        """A learner (re)started; a restarted one continues from its checkpoint, so its step may go back."""
        with self._lock:
            self._learner_step = info.learner_step
            if info.policy_iter >= 0:
                self._published.clear()  # a restarted learner's iterations may go back
                self._publish(info.policy_iter)
                self._evaluated_policy = min(self._evaluated_policy, self._policy_iter - 1)
                self._handed_policy = min(self._handed_policy, self._policy_iter - 1)
            self._last_eval_iter = min(self._last_eval_iter, self._learner_step)

    def _publish(self, policy_iter: int) -> None:
        self._policy_iter = policy_iter
        self._published.append((policy_iter, self._envstep))
        if len(self._published) > 4096:  # no evaluation for long: older policies map to a later (higher) count
            del self._published[:2048]

    def _envstep_of(self, policy_iter: int) -> int:
        """The env steps collected when ``policy_iter`` was published, at most the count now (also the answer for a
        policy not heard of yet)."""
        i = bisect.bisect_left(self._published, (policy_iter, -1))
        step = self._published[i][1] if i < len(self._published) else self._envstep
        del self._published[:i]  # evaluations go forward: older policies are not asked for again
        return min(step, self._envstep)

    def learner_may_train(self, buffer_count: int) -> bool:
        """Enough data and pacing allows it; ``EVAL_LEAD`` eval periods past the last evaluation, the learner waits for
        the next one if one runs or can start (so it never trains past a policy that reached the stop value unseen)."""
        with self._lock:
            newer = self._policy_iter > max(self._evaluated_policy, self._handed_policy)
            eval_can_come = bool(self._evaluating) or self._failed_evals > 0 or newer
            return self._end_reason is None and self._pacing.learner_may_train(buffer_count, eval_can_come)

    def batch_served(self) -> None:
        with self._lock:
            self._pacing.batch_served()

    # ---------------------------------------------------------------- collectors
    def increase_collector_task_space(self) -> None:
        with self._lock:
            self._collectors += 1
            if not self._fixed_space:
                self._collector_space.increase_space()

    def decrease_collector_task_space(self) -> None:
        with self._lock:
            self._collectors = max(0, self._collectors - 1)
            if not self._fixed_space:
                self._collector_space.decrease_space()

    def _eval_due(self) -> bool:
        space = max(1, self._collectors // 2)  # one evaluation at a time per two collectors
        if len(self._evaluating) >= space or self._policy_iter <= max(self._evaluated_policy, self._handed_policy):
            return False
        return (self._learner_step - self._last_eval_iter >= self._eval_freq
                or time.monotonic() - self._last_eval_time >= self._eval_interval)

    def get_collector_task(self, collector: str = "") -> CollectTask | EvalTask | None:
        with self._lock:
            if self._end_reason is not None or self._policy_iter < 0:
                return None
            eval_flag = self._failed_evals > 0 or self._eval_due()  # a failed evaluation first: it ends sooner
            if not eval_flag and not self._pacing.collect_allowed(self._collectors):
                return None
            if not self._collector_space.acquire_space():
                return None
            task_id = f"{COLLECT_TASK_PREFIX}{self._session}_{next(_uid)}"
            info = {"learner_train_iter": self._learner_step, "collector_envstep": self._envstep,
                    "envstep": self._envstep}  # DI-engine's keys ('envstep' is read by its command modes)
            if eval_flag:
                if self._failed_evals > 0:
                    self._failed_evals -= 1
                else:  # an evaluation of the newest policy: the next one waits for a newer policy
                    self._handed_policy = self._policy_iter
                    self._last_eval_iter = self._learner_step
                    self._last_eval_time = time.monotonic()
                    self._pacing.evaluation_handed_out()
                self._evaluating.add(task_id)
                return EvalTask(task_id=task_id, buffer_id=self._buffer_id, policy_id=self._policy_id,
                                train_iter=self._learner_step, envstep=self._envstep,
                                best_return=None if self._best_return == -math.inf else self._best_return,
                                eval_setting=dict(self._command.get_setting_eval(info)))
            self._pacing.collect_sent(task_id)
            return CollectTask(task_id=task_id, buffer_id=self._buffer_id, policy_id=self._policy_id,
                               n_sample=self._n_sample, train_iter=self._learner_step, envstep=self._envstep,
                               collect_setting=dict(self._command.get_setting_collect(info)))

    def finish_collector_task(self, task_id: str, finished_task: CollectResult | EvalResult) -> bool:
        self._collector_space.release_space()
        with self._lock:
            if isinstance(finished_task, EvalResult):
                self._evaluating.discard(task_id)
                return self._finish_eval(finished_task)
            self._pacing.collect_ended(task_id, finished_task.sample_count)
            self._envstep += finished_task.envstep
            if self._envstep >= self.max_env_step and self._end_reason is None:
                self._end_reason = f"reached max_env_step ({self.max_env_step:g})"
            return False

    def _finish_eval(self, finished: EvalResult) -> bool:
        mean = finished.eval_return_mean
        self._evaluated_policy = max(self._evaluated_policy, finished.policy_iter)
        self._best_return = max(self._best_return, mean)
        self.eval_history.append(EvalRecord(train_iter=finished.policy_iter,
                                            env_step=self._envstep_of(finished.policy_iter),
                                            eval_return_mean=mean, eval_return_std=finished.eval_return_std))
        if mean >= self._stop_value and self.stop_at_stop_value and self._end_reason is None:
            self._end_reason = f"evaluation reached the stop value ({mean:.4g} >= {self._stop_value:g})"
            return True
        return False

    def notify_fail_collector_task(self, task: CollectTask | EvalTask) -> None:
        self._collector_space.release_space()
        with self._lock:
            if isinstance(task, EvalTask):
                if task.task_id in self._evaluating:
                    self._evaluating.discard(task.task_id)
                    self._failed_evals += 1
            else:
                self._pacing.collect_ended(task.task_id)

    # ---------------------------------------------------------------- status
    def get_policy_id(self) -> str:
        return self._policy_id

    @property
    def end_reason(self) -> str | None:
        return self._end_reason

    def request_end(self, reason: str) -> None:
        with self._lock:
            if self._end_reason is None:
                self._end_reason = reason

    @property
    def reached_stop_value(self) -> bool:
        return self._best_return >= self._stop_value

    def _status(self) -> dict[str, Any]:
        return dict(learner_step=self._learner_step, policy_iter=self._policy_iter, envstep=self._envstep,
                    pushed=self._pacing.pushed, served_batches=self._pacing.served, collectors=self._collectors,
                    best_return=None if self._best_return == -math.inf else self._best_return,
                    last_eval=self.eval_history[-1] if self.eval_history else None)

    def status(self) -> CommanderStatus:
        with self._lock:
            return CommanderStatus(**self._status())

    def state_dict(self) -> dict[str, Any]:
        """What a resumed run continues from (``ding -m parallel --resume``): the env-step count (the exploration
        schedule follows it), the best return and the evaluations so far, and how the run ended (JSON)."""
        with self._lock:
            return CommanderState(**self._status(), eval_history=list(self.eval_history),
                                  end_reason=self._end_reason, reached_stop_value=self.reached_stop_value).to_json()

    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """Continue a stopped run's counters. The replay buffer starts empty, so pacing (served batches per pushed
        sample) starts afresh; the learner's step comes from its checkpoint when it starts."""
        saved = CommanderState.from_json(state, peer="the saved coordinator state")
        with self._lock:
            self._envstep = saved.envstep
            self._best_return = -math.inf if saved.best_return is None else saved.best_return
            self.eval_history = list(saved.eval_history)
