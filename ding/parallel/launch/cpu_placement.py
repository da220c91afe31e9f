"""Where the processes of a local parallel run may run: each training process pinned to a core of its own while the
other roles are moved off it only while it trains flat out (``system_config.cpu_affinity``, docs/parallel.md "CPU
placement"; the A/B is in docs/benchmarks.md, Parallel mode).

``ding -m parallel`` plans the placement before it starts any role (:func:`plan_placement`; nothing where the machine
has a CPU for every process of the run), hands it to every role in :data:`PLACEMENT_ENV`, and each training process
pins itself when it starts (:func:`apply_placement`); the launcher's :class:`PlacementGovernor` moves the run's other
role processes while the run lasts.
"""
from __future__ import annotations

import logging
import os
import re
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

__all__ = ["PLACEMENT_ENV", "SETTINGS", "CpuPlacement", "plan_placement", "apply_placement", "pin_process",
           "cpus_reserved_by_other_runs", "format_cpus", "PlacementGovernor", "RunTree", "process_tree", "is_trainer"]

PLACEMENT_ENV = "DING_CPU_PLACEMENT"
_LEARNER_COMM = re.compile(r"^ding-learner\d+$")  # a learner's role process, which trains


@dataclass(frozen=True)
class CpuPlacement:
    """The CPUs of each training process (by learner name)."""

    trainers: dict[str, frozenset[int]] = field(default_factory=dict)

    def to_env(self) -> str:
        """``learner0=1;learner1=2-3``: what :meth:`from_env` reads."""
        return ";".join(f"{name}={format_cpus(cpus)}" for name, cpus in sorted(self.trainers.items()))

    @classmethod
    def from_env(cls, text: str) -> CpuPlacement:
        trainers: dict[str, frozenset[int]] = {}
        for part in filter(None, text.split(";")):
            name, sep, cpus = part.partition("=")
            if not sep or not name:
                raise ValueError(f"{PLACEMENT_ENV}={text!r} (environment variable, set by ding -m parallel): "
                                 f"{part!r} is not NAME=CPUS; unset it to let the OS place the processes")
            parsed = _parse_cpus(cpus, where=f"{PLACEMENT_ENV}={text!r}")
            if not parsed:
                raise ValueError(f"{PLACEMENT_ENV}={text!r} (environment variable, set by ding -m parallel): {name} "
                                 "has no CPUs; unset it to let the OS place the processes")
            trainers[name] = parsed
        return cls(trainers)

    def describe(self) -> str:
        who = ", ".join(f"{name}'s training on CPU {format_cpus(cpus)}" for name, cpus in sorted(self.trainers.items()))
        return f"{who}; the other roles kept off it while it trains flat out, on every CPU while it waits for data"


def format_cpus(cpus: Iterable[int]) -> str:
    """``{0, 1, 2, 5}`` -> ``'0-2,5'`` (the kernel's list format)."""
    out: list[str] = []
    run: list[int] = []
    for c in sorted(cpus):
        if run and c == run[-1] + 1:
            run.append(c)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [c]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def _parse_cpus(text: str, where: str) -> frozenset[int]:
    cpus: set[int] = set()
    for item in filter(None, text.strip().split(",")):
        lo, sep, hi = item.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError(f"{where}: {text!r} is not a CPU list such as '0-2,5'")
        cpus.update(range(int(lo), int(hi) + 1) if sep else (int(lo),))
    return frozenset(cpus)


def allowed_cpus() -> frozenset[int] | None:
    """The CPUs this process may run on; None where the OS has no affinity (then nothing is placed)."""
    if not hasattr(os, "sched_getaffinity"):
        return None
    return frozenset(os.sched_getaffinity(0))


def cpus_reserved_by_other_runs(proc: str = "/proc") -> frozenset[int]:
    """CPUs that the training processes of other ding runs on this host hold as their own (a trainer pinned to fewer
    CPUs than the host has): a second run does not put its trainer on the same core."""
    try:
        pids = [p for p in os.listdir(proc) if p.isdigit()]
    except OSError:
        return frozenset()
    total = os.cpu_count() or 1
    held: set[int] = set()
    for pid in pids:
        if int(pid) == os.getpid() or not is_trainer(int(pid), proc):
            continue
        try:
            with open(os.path.join(proc, pid, "status")) as f:
                line = next((x for x in f if x.startswith("Cpus_allowed_list:")), "")
        except OSError:  # (gone meanwhile, or not ours to read)
            continue
        try:
            cpus = _parse_cpus(line.partition(":")[2], where=f"{proc}/{pid}/status")
        except ValueError:
            continue
        if 0 < len(cpus) < total:
            held |= cpus
    return frozenset(held)


SETTINGS = ("auto", "off")


def plan_placement(setting: str, learners: list[str], threads_per_trainer: int = 1,
                   allowed: frozenset[int] | None = None, reserved: frozenset[int] | None = None,
                   processes: int = 0) -> tuple[CpuPlacement | None, str]:
    """The placement for a run of ``processes`` processes whose training processes are ``learners`` (one per
    learner), each running ``threads_per_trainer`` torch threads, and a line saying what was decided and why.

    ``'off'``: none. ``'auto'``: none where the allowed CPUs are at least as many as the run's ``processes`` (each
    can have a CPU: nothing to gain; 0: not counted); else each trainer is pinned to CPUs of its own, taken from the
    end of the allowed set and not held by another run's trainer, when at least one allowed CPU is left besides them;
    the other roles start on every CPU, and the launcher's :class:`PlacementGovernor` moves them off the trainers'
    CPUs while the trainers are busy and back while they wait for data.
    ``allowed`` / ``reserved`` default to this process's affinity and :func:`cpus_reserved_by_other_runs`."""
    if setting == "off":
        return None, "CPU placement off (system_config.cpu_affinity='off'): the OS places every role"
    if setting not in SETTINGS:
        raise ValueError(f"system_config.cpu_affinity must be one of {', '.join(map(repr, SETTINGS))}, got "
                         f"{setting!r}")
    allowed = allowed_cpus() if allowed is None else allowed
    if not allowed:
        return None, "CPU placement: this OS has no CPU affinity; the OS places every role"
    if len(allowed) >= processes > 0:
        return None, (f"CPU placement: none ({len(allowed)} CPUs for the run's {processes} processes: a CPU for each): "
                      "the OS places every role")
    reserved = cpus_reserved_by_other_runs() if reserved is None else reserved
    threads = max(1, threads_per_trainer)
    need = len(learners) * threads
    free = sorted(allowed - reserved)
    if not learners or len(free) < need + 1:
        held = f", {len(allowed & reserved)} held by another run's trainer" if allowed & reserved else ""
        return None, (f"CPU placement: none ({len(allowed)} CPUs{held}; a core of its own for each of {len(learners)} "
                      f"training process(es) needs {need + 1}): the OS places every role")
    take = free[len(free) - need:]
    placement = CpuPlacement({name: frozenset(take[i * threads:(i + 1) * threads]) for i, name in enumerate(learners)})
    return placement, (f"CPU placement: {placement.describe()} (system_config.cpu_affinity={setting!r}; 'off' "
                       "leaves it to the OS)")


def pin_process(cpus: Iterable[int], pid: int | None = None) -> bool:
    """Restrict every thread of process ``pid`` (default: this one) to ``cpus``; threads started later inherit it
    from the thread that starts them. False where the OS has no affinity or refused."""
    if not hasattr(os, "sched_setaffinity"):
        return False
    cpus = set(cpus)
    pid = os.getpid() if pid is None else pid
    try:
        tids = [int(t) for t in os.listdir(f"/proc/{pid}/task")]
    except OSError:
        tids = [0] if pid == os.getpid() else [pid]
    ok = False
    for tid in tids:
        try:
            os.sched_setaffinity(tid, cpus)
            ok = True
        except OSError:  # (a thread that ended meanwhile; or a CPU taken offline: the rest still applies)
            continue
    return ok


def apply_placement(name: str, trains: bool, env: dict[str, str] | None = None) -> frozenset[int] | None:
    """Apply this process's part of the placement in :data:`PLACEMENT_ENV` (none set: nothing to do): the CPUs of
    learner ``name``'s training when this process ``trains`` (the other roles are moved by the launcher's governor).
    The CPUs applied, or None (nothing applied)."""
    text = (os.environ if env is None else env).get(PLACEMENT_ENV, "")
    if not text or not trains:
        return None
    cpus = CpuPlacement.from_env(text).trainers.get(name)
    if cpus is None:  # a learner the plan did not count
        return None
    return cpus if pin_process(cpus) else None


def _comm(pid: int, proc: str = "/proc") -> str:
    try:
        with open(f"{proc}/{pid}/comm") as f:
            return f.read().strip()
    except OSError:
        return ""


def is_trainer(pid: int, proc: str = "/proc") -> bool:
    """Whether process ``pid`` trains: a learner's role process (``ding-learnerN``)."""
    return bool(_LEARNER_COMM.match(_comm(pid, proc)))


def process_tree(root: int, proc: str = "/proc") -> list[int]:
    """``root`` and every process below it (Linux ``/proc``; ``[root]`` where it cannot be read)."""
    children: dict[int, list[int]] = {}
    try:
        names = os.listdir(proc)
    except OSError:
        return [root]
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"{proc}/{name}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
        children.setdefault(ppid, []).append(int(name))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, ()))
    return out


def cpu_seconds(pid: int, proc: str = "/proc") -> float | None:
    """CPU seconds (user + system, every thread, ended ones too) of process ``pid``; None if it is gone."""
    try:
        with open(f"{proc}/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return None


class RunTree:
    """The run's processes: ``root`` (the launcher) and the role processes ``roles()`` names with what runs under
    them (never the launcher's other children, e.g. a notebook's), split into the processes that train and the others
    (read again at most once every ``max_age`` seconds: roles restart, collectors start env workers). A process trains
    when its name says so (``ding-learnerN``) or when it runs on a trainer's CPUs alone (pinned there)."""

    def __init__(self, root: int, trainer_cpus: list[frozenset[int]], roles: Callable[[], Iterable[int]],
                 max_age: float = 1.0, proc: str = "/proc") -> None:
        self.root = int(root)
        self._roles = roles
        self._trainer_cpus = list(trainer_cpus)
        self._max_age = float(max_age)
        self._proc = proc
        self._at = float("-inf")
        self._trainers: list[int] = []
        self._others: list[int] = []

    def _read(self) -> None:
        if time.monotonic() - self._at < self._max_age:
            return
        self._at = time.monotonic()
        tree = [self.root] + [p for pid in self._roles() for p in process_tree(int(pid), self._proc)]
        self._trainers = [p for p in tree if is_trainer(p, self._proc) or _affinity(p) in self._trainer_cpus]
        self._others = [p for p in tree if p not in self._trainers]

    def trainers(self) -> list[int]:
        self._read()
        return self._trainers

    def others(self) -> list[int]:
        """(Read afresh: the governor calls this when it moves them.)"""
        self._at = float("-inf")
        self._read()
        return self._others


def _affinity(pid: int) -> frozenset[int] | None:
    try:
        return frozenset(os.sched_getaffinity(pid))
    except OSError:  # (gone, or no affinity on this OS)
        return None


class PlacementGovernor:
    """``cpu_affinity='auto'``: keep the other processes of the run off the trainers' CPUs while the trainers are
    busy, and let them back while the trainers wait for data.

    Whether the learner or collection is the bottleneck changes with the env and during the run, so the launcher
    looks every ``period`` seconds: a trainer that used at least
    ``busy_above`` of a core since the last look is the bottleneck, and the others move off its CPUs; once it uses
    ``idle_below`` or less (it waits for data: collection is the bottleneck), they may use every CPU again.

    ``trainers()`` and ``others()`` list the pids to watch and to move (they change: roles restart, collectors start
    env workers). A failure of the governor itself is logged once and stops it; the run goes on, placed as it was.
    """

    def __init__(self, trainer_cpus: frozenset[int], allowed: frozenset[int], trainers: Callable[[], list[int]],
                 others: Callable[[], list[int]], period: float = 0.25, busy_above: float = 0.85,
                 idle_below: float = 0.6, cpu_of: Callable[[int], float | None] = cpu_seconds,
                 pin: Callable[[Iterable[int], int], bool] = pin_process,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.apart_cpus = frozenset(allowed - trainer_cpus)
        self.allowed = frozenset(allowed)
        if not self.apart_cpus:
            raise ValueError("PlacementGovernor: no CPU is left for the other roles besides the trainers'")
        self._trainers, self._others = trainers, others
        self.period, self.busy_above, self.idle_below = float(period), float(busy_above), float(idle_below)
        self._cpu_of, self._pin, self._clock = cpu_of, pin, clock
        self.apart = False  # the other processes are kept off the trainers' CPUs now
        self.switches = 0
        self.apart_s = 0.0  # time spent apart (reported at the end)
        self._last: tuple[float, dict[int, float]] | None = None
        self._since = clock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._logger = logging.getLogger("ding.cpu_placement")

    def tick(self) -> float | None:
        """One look: the trainers' mean use of a core since the last look (None: nothing to compare yet), after moving
        the other processes if that crossed a threshold."""
        now = self._clock()
        used = {pid: c for pid in self._trainers() if (c := self._cpu_of(pid)) is not None}
        last, self._last = self._last, (now, used)
        if last is None or not used or now <= last[0]:
            return None
        common = [pid for pid in used if pid in last[1]]  # (a trainer that restarted starts a new reading)
        if not common:
            return None
        busy = sum(used[p] - last[1][p] for p in common) / (now - last[0]) / len(common)
        if not self.apart and busy >= self.busy_above:
            self._move(self.apart_cpus, apart=True)
        elif self.apart and busy <= self.idle_below:
            self._move(self.allowed, apart=False)
        return busy

    def _move(self, cpus: frozenset[int], apart: bool) -> None:
        now = self._clock()
        if self.apart:
            self.apart_s += now - self._since
        self._since = now
        for pid in self._others():
            self._pin(cpus, pid)
        self.apart = apart
        self.switches += 1

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="ding-cpu-placement", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(self.period):
            try:
                self.tick()
            except Exception as e:  # noqa: BLE001 -- the run goes on, placed as it is now
                self._logger.warning(f"CPU placement: the governor stopped ({type(e).__name__}: {e}); the roles stay "
                                     "where they are")
                return

    def close(self) -> None:
        """Stop looking; every other process may use every CPU again (this one included)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(5.0)
        if self.apart:
            self._move(self.allowed, apart=False)
