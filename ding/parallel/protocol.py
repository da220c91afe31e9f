"""The protocol of parallel mode: one typed record per task and per answer, sent as JSON and checked by ``from_json``
where it enters (one :class:`ProtocolError` naming record, field and peer); docs/parallel.md has the table."""
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

Record = JsonRecord

DATA_ID = "data_id"  # the key of a sample's data file in metadata and in buffer items
COLLECT_TASK_PREFIX = "collector_task_"  # collect task ids, and so the names of the data files they write


class TaskName(str, Enum):
    """The tasks the coordinator sends (DI-engine's names); the value is the name on the wire."""

    LEARNER_START = "learner_start_task"
    LEARNER_GET_DATA = "learner_get_data_task"
    LEARNER_LEARN = "learner_learn_task"
    LEARNER_CLOSE = "learner_close_task"
    COLLECTOR_START = "collector_start_task"
    COLLECTOR_DATA = "collector_data_task"  # a collect task or an evaluation (``eval_flag``)
    COLLECTOR_CLOSE = "collector_close_task"


def _check_id(rec: Record, name: str, value: Any, peer: str) -> None:
    """Raise for field ``name`` unless ``value`` is a data id (a plain file name: no separators, no '..')."""
    if not isinstance(value, str):
        raise rec._bad(name, f"must be a str, got {type(value).__name__}", peer)
    try:
        split_data_id(value)
    except DataFileError:
        raise rec._bad(name, f"{value!r:.80} is not a data id (a plain file name of letters, digits, '_.-', no '..', "
                             "no separators; optionally ':<sample index>')", peer) from None


def _at_least(rec: Record, peer: str, low: int, *names: str) -> None:
    for name in names:
        if getattr(rec, name) < low:
            raise rec._bad(name, f"must be >= {low}, got {getattr(rec, name)}", peer)


# ------------------------------------------------------------------------------------------------ learner
@dataclass
class LearnerStarted(Record):
    """Answer to :class:`LearnerStartTask`: the step the learner starts at."""

    learner_step: int
    policy_iter: int
    loaded: bool = False  # continued from the run's checkpoint
    already_started: bool = False  # a repeated start task found training running

    def _validate(self, peer: str, context: Any) -> None:
        _at_least(self, peer, 0, "learner_step")
        _at_least(self, peer, -1, "policy_iter")


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
        _at_least(self, peer, 1, "batch_size", "n_batches")


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
        _at_least(self, peer, 0, "learner_step")

    @classmethod
    def from_learner(cls, learn_info: Mapping[str, Any], policy_iter: int, stats: Mapping[str, float],
                     jsonable: Any) -> LearnInfo:
        """The record of a ``BaseLearner``'s ``learn_info`` (``jsonable`` turns tensors into lists)."""
        pi = learn_info.get("priority_info")
        fields = dataclasses.fields(PriorityInfo)
        priority = PriorityInfo(**{f.name: jsonable(pi[f.name]) for f in fields}) if pi else None
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
        _at_least(self, peer, 0, "trained", "skipped_files")


@dataclass
class LearnTask(Record):
    """Batches of sampled metadata as columns ``{key: [value per item]}`` with a ``data_id`` column; answered once
    all are trained (or after ``wait_s``)."""

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
            if not data_ids_valid(ids):  # all of them in one pass; else find and name the bad one
                for j, data_id in enumerate(ids):
                    _check_id(self, f"data[{i}].data_id[{j}]", data_id, peer)

    def batches(self) -> list[list[dict[str, Any]]]:
        return [from_columns(b) for b in self.data]

    @classmethod
    def of_batches(cls, batches: list[list[dict[str, Any]]], envstep: int, wait_s: float) -> LearnTask:
        """The task for batches of metadata dicts (sent as columns: a fraction of the JSON)."""
        return cls(data=[to_columns(b) for b in batches], envstep=envstep, wait_s=wait_s)


@dataclass
class LearnerClosed(Record):
    """Answer to :class:`LearnerCloseTask`: the final step and checkpoint."""

    learner_step: int
    ckpt_name: str | None = None
    train_s: float = 0.0  # seconds the training thread ran, and of them waited for a batch
    data_wait_s: float = 0.0
    trained: int = 0  # train iterations this process ran (a restarted one: since its checkpoint)

    def _validate(self, peer: str, context: Any) -> None:
        _at_least(self, peer, 0, "learner_step", "train_s", "data_wait_s", "trained")


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
    """One collected sample: its data file under ``path_data``, the policy that made it, its priority."""

    data_id: str
    collect_iter: int = 0
    priority: float | None = None

    def _validate(self, peer: str, context: Any) -> None:
        _check_id(self, "data_id", self.data_id, peer)

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
    """The players of a battle collect task in seat order (seat 0: the learner's) and the policy files under
    ``path_policy`` that play them; one file in both seats is self-play. With ``fixed_opponent`` seat 1 is the
    collector's fixed opponent: ``players[1]`` is :data:`FIXED_OPPONENT` and only seat 0 has a file."""

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
            _check_id(self, f"policy_files[{i}]", name, peer)

    @property
    def self_play(self) -> bool:
        return not self.fixed_opponent and self.policy_files[0] == self.policy_files[1]


@dataclass
class BattleResult(Record):
    """The finished games of one battle task: ``games[k][i]`` is seat ``i``'s result of game ``k`` (one of
    :data:`BATTLE_OUTCOMES`; the seats agree). It travels only in a finished task's answer."""

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
        """Seat 0's result of every game."""
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
        _at_least(self, peer, 0, "envstep", "sample_count")
        if self.eval_flag:
            raise self._bad("eval_flag", "must be false in the answer to a collect task", peer)
        if isinstance(context, CollectTask):
            job, got = context.job, None if self.battle is None else self.battle.players
            if job is not None and got != job.players:
                raise self._bad("battle.players", f"must be the task's players {job.players}, got {got}", peer)
            if job is None and got is not None:
                raise self._bad("battle", "the task was no battle (it had no job)", peer)
            prefix = f"{context.task_id}_"
            for i, meta in enumerate(self.metadata):  # (SampleMeta checked each is a plain file name)
                if not meta.data_id.startswith(prefix):
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
    eval_flag: bool = True
    battle: BattleResult | None = None  # a battle evaluation's games against the fixed opponent

    def _validate(self, peer: str, context: Any) -> None:
        _at_least(self, peer, 0, "duration")
        if not self.eval_flag:
            raise self._bad("eval_flag", "must be true in the answer to an evaluation", peer)

    @classmethod
    def from_evaluator(cls, info: Mapping[str, Any], policy_iter: int) -> EvalResult:
        """The record of a serial evaluator's ``eval()`` info dict."""
        return cls(policy_iter=policy_iter, eval_return_mean=float(info["eval_episode_return_mean"]),
                   eval_return_std=float(info["eval_episode_return_std"]),
                   episode_returns=[float(r) for r in info["eval_episode_return"]],
                   episode_lengths=[int(n) for n in info["episode_length"]],
                   envstep_count=int(info["envstep_count"]), duration=float(info["duration"]))


@dataclass
class CollectTask(Record):
    """Collect ``n_sample`` samples with ``collect_setting`` (e.g. epsilon) into data files ``<task_id>_<i>``."""

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
        _at_least(self, peer, 1, "n_sample")
        _check_id(self, "task_id", self.task_id, peer)


@dataclass
class EvalTask(Record):
    """Evaluate the newest policy with ``eval_setting``; a new best (above ``best_return``) is kept as ``ckpt_best``."""

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
    """The task record of a ``task/new`` message named ``name`` (a collector data task is an evaluation by its
    ``eval_flag``)."""
    try:
        task = TaskName(name)
    except ValueError:
        raise ProtocolError("task", "name", f"{name!r:.60} is no task of parallel mode", peer) from None
    if task is TaskName.COLLECTOR_DATA:
        is_eval = isinstance(payload, Mapping) and payload.get("eval_flag") is True
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
    """A learner task the commander hands out: the buffer it trains from, where it publishes its policy."""

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
    league: dict[str, Any] | None = None  # one_vs_one: the league's state, the games it counted, and those against the
    league_games: int = 0  # fixed opponent (not in the league)
    fixed_opponent_games: int = 0


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
