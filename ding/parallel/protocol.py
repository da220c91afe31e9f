"""The protocol of parallel mode: the task names and one typed record per task and per answer.

The coordinator sends tasks to the learner and the collectors (:class:`TaskName`); each task's payload and each answer
is one of the records below. A record crosses the wire as a JSON object (``to_json``) and is rebuilt where it enters a
process with ``from_json``, which checks every field against the record's annotations: a missing field, a wrong type
or a non-finite number raises one :class:`ProtocolError` that names the record, the field and the peer it came from.
Records add their own rules on top (a data id is a plain file name under the collector task that wrote it, lists that
go together have one length, ...). A peer's malformed message fails that task, never the run (docs/parallel.md).

Fields without a default are required; keys a record does not know are ignored (a newer peer may send more).
The protocol table in docs/parallel.md is checked against this module by tests/worker/test_parallel_protocol.py.
"""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar

from ding.parallel.files import data_ids_valid, from_columns, split_data_id, to_columns
from ding.utils import DataFileError, JsonRecord, ProtocolError
from ding.utils.json_record import fields_doc

Record = JsonRecord  # every task and answer below is one

DATA_ID = "data_id"  # the key of a sample's data file in metadata and in buffer items (SampleMeta.data_id)
COLLECT_TASK_PREFIX = "collector_task_"  # collect task ids, and so the names of the data files they write
_EVAL_FLAG = "eval_flag"


class TaskName(str, Enum):
    """The tasks the coordinator sends (DI-engine's names); the value is the name on the wire."""

    LEARNER_START = "learner_start_task"
    LEARNER_GET_DATA = "learner_get_data_task"
    LEARNER_LEARN = "learner_learn_task"
    LEARNER_CLOSE = "learner_close_task"
    COLLECTOR_START = "collector_start_task"
    COLLECTOR_DATA = "collector_data_task"  # a collect task or an evaluation (``eval_flag``)
    COLLECTOR_CLOSE = "collector_close_task"


def check_data_id(data_id: Any) -> str | None:
    """What is wrong with ``data_id`` as a data file name (None: nothing): a plain name, no separators, no '..'."""
    if not isinstance(data_id, str):
        return f"must be a str, got {type(data_id).__name__}"
    try:
        split_data_id(data_id)  # the one rule for data ids
    except DataFileError:
        return (f"{data_id!r:.80} is not a data id (a plain file name of letters, digits, '_.-', no '..', no "
                "separators; optionally ':<sample index>')")
    return None


def _nonnegative(rec: Record, peer: str, *names: str) -> None:
    for name in names:
        if getattr(rec, name) < 0:
            raise rec._bad(name, f"must be >= 0, got {getattr(rec, name)}", peer)


# ------------------------------------------------------------------------------------------------ learner
@dataclass
class LearnerStarted(Record):
    """Answer to :class:`LearnerStartTask`: where the learner starts (a restarted one continues from a checkpoint)."""

    learner_step: int
    policy_iter: int
    loaded: bool = False  # continued from the run's checkpoint
    already_started: bool = False  # a repeated start task found training running

    def _validate(self, peer: str, context: Any) -> None:
        _nonnegative(self, peer, "learner_step")
        if self.policy_iter < -1:
            raise self._bad("policy_iter", f"must be >= -1, got {self.policy_iter}", peer)


@dataclass
class LearnerStartTask(Record):
    """Build the policy and the learner (from the run's latest checkpoint under ``load_path``), start training."""

    TASK: ClassVar[TaskName] = TaskName.LEARNER_START
    RESULT: ClassVar[type[Record]] = LearnerStarted
    task_id: str
    main_config: dict[str, Any]
    path_data: str
    path_policy: str
    policy_id: str
    buffer_id: str
    seed: int
    load_path: str | None = None


@dataclass
class LearnerDemand(Record):
    """How much data the learner takes: batches of ``batch_size``, up to ``n_batches`` queued."""

    batch_size: int
    n_batches: int = 1
    cur_learner_iter: int = 0

    def _validate(self, peer: str, context: Any) -> None:
        for name in ("batch_size", "n_batches"):
            if getattr(self, name) < 1:
                raise self._bad(name, f"must be >= 1, got {getattr(self, name)}", peer)


@dataclass
class DemandAnswer(Record):
    """Answer to :class:`GetDataTask`: the learner's data demand (None: none yet, ask again)."""

    demand: LearnerDemand | None = None


@dataclass
class GetDataTask(Record):
    """Wait up to ``wait_s`` seconds for the learner's data demand."""

    TASK: ClassVar[TaskName] = TaskName.LEARNER_GET_DATA
    RESULT: ClassVar[type[Record]] = DemandAnswer
    wait_s: float = 0.5


@dataclass
class PriorityInfo(Record):
    """New priorities for sampled items (the replay buffer's ``update``): three lists of one length."""

    replay_unique_id: list[int]
    replay_buffer_idx: list[int]
    priority: list[float]

    def _validate(self, peer: str, context: Any) -> None:
        n = len(self.priority)
        for name in ("replay_unique_id", "replay_buffer_idx"):
            if len(getattr(self, name)) != n:
                raise self._bad(name, f"has {len(getattr(self, name))} items, 'priority' has {n}", peer)


@dataclass
class LearnInfo(Record):
    """One trained batch: the learner's step, the policy it published last, new priorities, its scalars."""

    learner_step: int
    policy_iter: int = -1
    learner_done: bool = False
    priority_info: PriorityInfo | None = None
    stats: dict[str, Any] = field(default_factory=dict)  # scalars for the logs only (never used to decide)
    skipped: bool = False  # every data file of the batch was missing or damaged: nothing trained

    def _validate(self, peer: str, context: Any) -> None:
        _nonnegative(self, peer, "learner_step")

    @classmethod
    def from_learner(cls, learn_info: Mapping[str, Any], policy_iter: int, stats: Mapping[str, float],
                     jsonable: Any) -> LearnInfo:
        """The record of a :class:`BaseLearner`'s ``learn_info`` dict (``jsonable`` turns tensors into lists)."""
        pi = learn_info.get("priority_info")
        priority = None
        if pi:
            priority = PriorityInfo(**{f.name: jsonable(pi[f.name]) for f in dataclasses.fields(PriorityInfo)})
        return cls(learner_step=int(learn_info.get("learner_step", 0)), policy_iter=policy_iter,
                   learner_done=bool(learn_info.get("learner_done", False)), priority_info=priority,
                   stats={k: float(v) for k, v in stats.items()})


@dataclass
class LearnResult(Record):
    """Answer to :class:`LearnTask`, once the learner trained on its batches."""

    infos: list[LearnInfo]
    trained: int = 0
    skipped_files: int = 0

    def _validate(self, peer: str, context: Any) -> None:
        _nonnegative(self, peer, "trained", "skipped_files")


@dataclass
class LearnTask(Record):
    """Batches of sampled metadata to train on, each as columns ``{key: [value per item]}`` with a ``data_id``
    column; the learner answers when it trained on all of them (or after ``wait_s``)."""

    TASK: ClassVar[TaskName] = TaskName.LEARNER_LEARN
    RESULT: ClassVar[type[Record]] = LearnResult
    data: list[dict[str, list[Any]]]
    envstep: int = -1
    wait_s: float = 600.0

    def _validate(self, peer: str, context: Any) -> None:
        for i, batch in enumerate(self.data):
            ids = batch.get(DATA_ID)
            if ids is None:
                raise self._bad(f"data[{i}].data_id", "is missing", peer)
            if any(len(col) != len(ids) for col in batch.values()):
                raise self._bad(f"data[{i}]", "columns must all have the same length", peer)
            if data_ids_valid(ids):  # all of them in one pass; else find and name the bad one
                continue
            for j, data_id in enumerate(ids):
                problem = check_data_id(data_id)
                if problem:
                    raise self._bad(f"data[{i}].data_id[{j}]", problem, peer)

    def batches(self) -> list[list[dict[str, Any]]]:
        """The batches as lists of metadata dicts."""
        return [from_columns(b) for b in self.data]

    @classmethod
    def of_batches(cls, batches: list[list[dict[str, Any]]], envstep: int, wait_s: float) -> LearnTask:
        """The task for batches of metadata dicts (sent as columns: the same data in a fraction of the JSON)."""
        return cls(data=[to_columns(b) for b in batches], envstep=envstep, wait_s=wait_s)


@dataclass
class LearnerClosed(Record):
    """Answer to :class:`LearnerCloseTask`: the final step and checkpoint."""

    learner_step: int
    ckpt_name: str | None = None
    train_s: float = 0.0  # seconds the learner's training thread ran ...
    data_wait_s: float = 0.0  # ... and, of them, waited for its next batch (the rest it trained)
    trained: int = 0  # train iterations this learner process ran (a restarted one: since its checkpoint)

    def _validate(self, peer: str, context: Any) -> None:
        _nonnegative(self, peer, "learner_step", "train_s", "data_wait_s", "trained")


@dataclass
class LearnerCloseTask(Record):
    """Stop training (waiting up to ``wait_s``); the learner writes its final checkpoint."""

    TASK: ClassVar[TaskName] = TaskName.LEARNER_CLOSE
    RESULT: ClassVar[type[Record]] = LearnerClosed
    wait_s: float = 60.0


# ------------------------------------------------------------------------------------------------ collector
@dataclass
class CollectorStarted(Record):
    """Answer to :class:`CollectorStartTask`."""

    started: bool = True


@dataclass
class CollectorStartTask(Record):
    """Build the envs and the policy; the policy comes from ``path_policy/policy_id``."""

    TASK: ClassVar[TaskName] = TaskName.COLLECTOR_START
    RESULT: ClassVar[type[Record]] = CollectorStarted
    main_config: dict[str, Any]
    path_data: str
    path_policy: str
    policy_id: str
    seed: int


@dataclass
class SampleMeta(Record):
    """One collected sample: its data file (``data_id``, under ``path_data``), the policy that made it, its priority."""

    data_id: str
    collect_iter: int = 0
    priority: float | None = None

    def _validate(self, peer: str, context: Any) -> None:
        problem = check_data_id(self.data_id)
        if problem:
            raise self._bad("data_id", problem, peer)

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        if self.priority is None:
            del out["priority"]  # no priority: the buffer gives the item its current maximum
        return out


BATTLE_OUTCOMES = ("wins", "draws", "losses")  # one game's result for one player (DI-engine's words)
_MIRROR = {"wins": "losses", "losses": "wins", "draws": "draws"}


FIXED_OPPONENT = "fixed_opponent"  # seat 1's player id in a fixed-opponent job (no league player)


@dataclass
class BattleJob(Record):
    """The players of a battle collect task (one_vs_one commander): league player ids and the policy files (plain
    names under ``path_policy``) that play them, in seat order; seat 0 is the learner's player. The same file in both
    seats is self-play: one policy plays both players and both sides' samples are kept. With ``fixed_opponent`` seat 1
    is the collector's fixed opponent (the league's ``fixed_opponent_prob``): ``players[1]`` is
    :data:`FIXED_OPPONENT` and ``policy_files`` has seat 0's file only."""

    players: list[str]
    policy_files: list[str]
    fixed_opponent: bool = False

    def _validate(self, peer: str, context: Any) -> None:
        if len(self.players) != 2:
            raise self._bad("players", f"must name 2 players, got {len(self.players)}", peer)
        if self.fixed_opponent and self.players[1] != FIXED_OPPONENT:
            raise self._bad("players[1]", f"must be {FIXED_OPPONENT!r} in a fixed-opponent job, got "
                                          f"{self.players[1]!r:.60}", peer)
        files = 1 if self.fixed_opponent else len(self.players)
        if len(self.policy_files) != files:
            raise self._bad("policy_files", f"has {len(self.policy_files)} entries, {files} expected (one per "
                                           "seat played by a policy file)", peer)
        for i, name in enumerate(self.policy_files):
            problem = check_data_id(name)
            if problem:
                raise self._bad(f"policy_files[{i}]", problem, peer)

    @property
    def self_play(self) -> bool:
        return not self.fixed_opponent and self.policy_files[0] == self.policy_files[1]


@dataclass
class BattleResult(Record):
    """The finished games of one battle task: ``games[k][i]`` is seat ``i``'s result of game ``k``, one of
    'wins' / 'draws' / 'losses', and the two seats' results of a game agree (a win is the other's loss). Only
    whole games are in it, and it travels only in the task's answer: a task that does not finish reports none."""

    players: list[str]
    games: list[list[str]] = field(default_factory=list)

    def _validate(self, peer: str, context: Any) -> None:
        n = len(self.players)
        if n != 2:
            raise self._bad("players", f"must name 2 players, got {n}", peer)
        for k, game in enumerate(self.games):
            if len(game) != n:
                raise self._bad(f"games[{k}]", f"has {len(game)} entries, one per player ({n}) expected", peer)
            for i, r in enumerate(game):
                if r not in BATTLE_OUTCOMES:
                    raise self._bad(f"games[{k}][{i}]", f"{r!r:.40} is not one of {', '.join(BATTLE_OUTCOMES)}",
                                    peer)
            if _MIRROR[game[0]] != game[1]:
                raise self._bad(f"games[{k}]", f"{game} do not agree (one player's win is the other's loss)", peer)

    def home_outcomes(self) -> list[str]:
        """Seat 0's result of every game (the league's ``finish_job`` reads the home player's view)."""
        return [game[0] for game in self.games]

    def rates(self) -> tuple[float, float, float]:
        """Seat 0's fractions of wins, draws and losses (nan without games)."""
        n = len(self.games)
        if not n:
            return math.nan, math.nan, math.nan
        home = self.home_outcomes()
        return home.count("wins") / n, home.count("draws") / n, home.count("losses") / n


@dataclass
class CollectResult(Record):
    """Answer to :class:`CollectTask`: the samples written (their metadata) and the episodes finished."""

    metadata: list[SampleMeta]
    envstep: int
    policy_iter: int = -1
    sample_count: int = 0
    episode_returns: list[float] = field(default_factory=list)
    episode_lengths: list[int] = field(default_factory=list)
    duration: float = 0.0
    eval_flag: bool = False
    battle: BattleResult | None = None  # a battle task's games (its task had a ``job``)

    def _validate(self, peer: str, context: Any) -> None:
        _nonnegative(self, peer, "envstep", "sample_count")
        job = context.job if isinstance(context, CollectTask) else None
        if job is not None and (self.battle is None or self.battle.players != job.players):
            got = None if self.battle is None else self.battle.players
            raise self._bad("battle.players", f"must be the task's players {job.players}, got {got}", peer)
        if job is None and isinstance(context, CollectTask) and self.battle is not None:
            raise self._bad("battle", "the task was no battle (it had no job)", peer)
        if self.eval_flag:
            raise self._bad("eval_flag", "must be false in the answer to a collect task", peer)
        prefix = f"{context.task_id}_" if isinstance(context, CollectTask) else None
        for i, meta in enumerate(self.metadata):  # (each is a plain file name: SampleMeta checked it)
            if prefix is not None and not meta.data_id.startswith(prefix):
                raise self._bad(f"metadata[{i}].data_id", f"{meta.data_id!r:.80} is not a data file of task "
                                                          f"{context.task_id} ('{prefix}*')", peer)
        self.sample_count = len(self.metadata)


@dataclass
class EvalResult(Record):
    """Answer to :class:`EvalTask`: the returns of the evaluation episodes."""

    policy_iter: int
    eval_return_mean: float
    eval_return_std: float = 0.0
    episode_returns: list[float] = field(default_factory=list)
    episode_lengths: list[int] = field(default_factory=list)
    envstep_count: int = 0
    duration: float = 0.0
    env_time: float = 0.0  # of duration: seconds the envs' steps took (what splitting an evaluation divides) ...
    policy_time: float = 0.0  # ... and the CPU seconds of the policy's forward passes (what every shard repeats)
    eval_flag: bool = True
    battle: BattleResult | None = None  # a battle evaluation's games against the fixed opponent

    def _validate(self, peer: str, context: Any) -> None:
        _nonnegative(self, peer, "duration", "env_time", "policy_time")
        if not self.eval_flag:
            raise self._bad("eval_flag", "must be true in the answer to an evaluation", peer)

    @classmethod
    def from_evaluator(cls, info: Mapping[str, Any], policy_iter: int) -> EvalResult:
        """The record of a serial evaluator's ``eval()`` info dict."""
        return cls(policy_iter=policy_iter, eval_return_mean=float(info["eval_episode_return_mean"]),
                   eval_return_std=float(info["eval_episode_return_std"]),
                   episode_returns=[float(r) for r in info["eval_episode_return"]],
                   episode_lengths=[int(n) for n in info["episode_length"]],
                   envstep_count=int(info["envstep_count"]), duration=float(info["duration"]),
                   env_time=float(info.get("env_time", 0.0)), policy_time=float(info.get("policy_time", 0.0)))


@dataclass
class CollectTask(Record):
    """Collect ``n_sample`` samples with ``collect_setting`` (e.g. epsilon) into data files named
    ``<task_id>_<i>``."""

    TASK: ClassVar[TaskName] = TaskName.COLLECTOR_DATA
    RESULT: ClassVar[type[Record]] = CollectResult
    task_id: str
    buffer_id: str
    policy_id: str
    n_sample: int
    train_iter: int = 0
    envstep: int = 0
    collect_setting: dict[str, Any] = field(default_factory=dict)
    eval_flag: bool = False
    job: BattleJob | None = None  # a battle: who plays whom (the one_vs_one commander's league decides)

    def _validate(self, peer: str, context: Any) -> None:
        if self.n_sample < 1:
            raise self._bad("n_sample", f"must be >= 1, got {self.n_sample}", peer)
        problem = check_data_id(self.task_id)
        if problem:
            raise self._bad("task_id", problem, peer)


@dataclass
class EvalTask(Record):
    """Evaluate the newest policy with ``eval_setting``; a new best (above ``best_return``) is kept as
    ``ckpt_best``."""

    TASK: ClassVar[TaskName] = TaskName.COLLECTOR_DATA
    RESULT: ClassVar[type[Record]] = EvalResult
    task_id: str
    buffer_id: str
    policy_id: str
    train_iter: int = 0
    envstep: int = 0
    best_return: float | None = None
    eval_setting: dict[str, Any] = field(default_factory=dict)
    eval_flag: bool = True
    n_episode: int = 0  # episodes of this task (a shard of an evaluation split over collectors); 0: the configured
    save_best: bool = True  # keep a new best as ckpt_best (False for a shard: the coordinator keeps the whole one's)

    def _validate(self, peer: str, context: Any) -> None:
        if self.n_episode < 0:
            raise self._bad("n_episode", f"must be >= 0 (0: the collector's n_evaluator_episode), got {self.n_episode}",
                            peer)


@dataclass
class CollectorFinishInfo(Record):
    """Answer to :class:`CollectorCloseTask`: what the collector did in all."""

    envstep: int = 0
    sample_count: int = 0
    episode_count: int = 0
    tasks: int = 0
    eval_tasks: int = 0
    policy_iter: int = -1


@dataclass
class CollectorCloseTask(Record):
    """Close the envs."""

    TASK: ClassVar[TaskName] = TaskName.COLLECTOR_CLOSE
    RESULT: ClassVar[type[Record]] = CollectorFinishInfo


TASK_RECORDS: tuple[type[Record], ...] = (LearnerStartTask, GetDataTask, LearnTask, LearnerCloseTask,
                                          CollectorStartTask, CollectTask, EvalTask, CollectorCloseTask)
WIRE_RECORDS: tuple[type[Record], ...] = (
    *TASK_RECORDS, LearnerStarted, DemandAnswer, LearnerDemand, LearnResult, LearnInfo, PriorityInfo, LearnerClosed,
    CollectorStarted, CollectResult, EvalResult, SampleMeta, CollectorFinishInfo, BattleJob, BattleResult)


def decode_task(name: str, payload: Any, peer: str = "the coordinator") -> Record:
    """The task record of a ``task/new`` message named ``name`` (a collector data task is a collect task or an
    evaluation by its ``eval_flag``)."""
    try:
        task = TaskName(name)
    except ValueError:
        raise ProtocolError("task", "name", f"{name!r:.60} is no task of parallel mode", peer) from None
    if task is TaskName.COLLECTOR_DATA:
        is_eval = isinstance(payload, Mapping) and payload.get(_EVAL_FLAG) is True
        return (EvalTask if is_eval else CollectTask).from_json(payload, peer)
    (cls,) = [c for c in TASK_RECORDS if c.TASK is task]  # type: ignore[attr-defined]
    return cls.from_json(payload, peer)


def decode_result(task: Record, data: Any, peer: str) -> Record:
    """The answer to ``task`` in ``data``, checked against the task (its record type, its data ids)."""
    cls: type[Record] = type(task).RESULT  # type: ignore[attr-defined]
    return cls.from_json(data, peer, context=task)


# ------------------------------------------------------------------------------------------------ coordinator side
@dataclass
class LearnerSlot(Record):
    """A learner task the commander hands out: which buffer it trains from, where it publishes its policy."""

    task_id: str
    buffer_id: str
    policy_id: str


@dataclass
class EvalRecord(Record):
    """One finished evaluation, as the commander keeps it (and the eval CSV writes it)."""

    train_iter: int
    env_step: int
    eval_return_mean: float
    eval_return_std: float = 0.0
    wall_time: float = 0.0
    win_rate: float | None = None  # battle evaluations: the share of games won against the fixed opponent


@dataclass
class CommanderStatus(Record):
    """The commander's progress counters."""

    learner_step: int = 0
    policy_iter: int = -1
    envstep: int = 0
    pushed: int = 0
    served_batches: int = 0
    collectors: int = 0
    best_return: float | None = None
    last_eval: EvalRecord | None = None


@dataclass
class CommanderState(CommanderStatus):
    """What a resumed run continues from (``ding -m parallel --resume``), saved as JSON."""

    eval_history: list[EvalRecord] = field(default_factory=list)
    end_reason: str | None = None
    reached_stop_value: bool = False
    league: dict[str, Any] | None = None  # the one_vs_one commander's league (players, payoff, ratings, generator)
    league_games: int = 0  # games of finished battle tasks the league counted (one_vs_one)
    fixed_opponent_games: int = 0  # games of finished tasks against the fixed opponent (one_vs_one; not in the league)


# ------------------------------------------------------------------------------------------------ documentation
def protocol_table() -> str:
    """The protocol as the Markdown tables of docs/parallel.md (a test keeps the two equal)."""
    rows = ["| task (wire name) | payload record: fields | answer record: fields |", "|---|---|---|"]
    for cls in TASK_RECORDS:
        result: type[Record] = cls.RESULT  # type: ignore[attr-defined]
        rows.append(f"| `{cls.TASK.value}` | {cls.__name__}: {fields_doc(cls)} | "  # type: ignore[attr-defined]
                    f"{result.__name__}: {fields_doc(result)} |")
    rows += ["", "| nested record | fields |", "|---|---|"]
    for cls in (LearnerDemand, LearnInfo, PriorityInfo, SampleMeta, BattleJob, BattleResult):
        rows.append(f"| {cls.__name__} | {fields_doc(cls)} |")
    return "\n".join(rows) + "\n"
