"""Where the processes of a local parallel run may run: each training process pinned to a core of its own
(``system_config.cpu_affinity``, docs/parallel.md "CPU placement").

On a 2-core machine a parallel run's roles want more CPU than there is while they collect and train at once. Left to
the scheduler, the training thread of a 3,000-iteration CartPole run waited 1.5 s for a core
(``/proc/<tid>/schedstat``) and trained at 0.45-0.55x the speed of the same update alone. Lower priorities for the
other roles (nice values, their sessions' autogroups) did not change that; pinning the training process did:
0.70-0.71x with the other roles free to use its core while it waits for data ('auto'), 0.77x with them kept off it
('exclusive'), which halves a collection-bound run's collectors on 2 cores (docs/benchmarks.md, Parallel mode).

``ding -m parallel`` plans the placement before it starts any role (:func:`plan_placement`), hands it to every role in
:data:`PLACEMENT_ENV`, and each process applies its part to itself when it starts (:func:`apply_placement`): the
training process of ``learner0`` (and every other member of a learner group) its own CPUs; with ``'exclusive'``
every other process the remaining ones, the launcher too (it hosts the coordinator; restored when the run ends).
"""
from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import dataclass, field

__all__ = ["PLACEMENT_ENV", "SETTINGS", "CpuPlacement", "plan_placement", "apply_placement", "pin_process",
           "cpus_reserved_by_other_runs", "format_cpus"]

PLACEMENT_ENV = "DING_CPU_PLACEMENT"
_TRAINER_COMM = re.compile(r"^ding-(trainer|learner[1-9]\d*$)")  # processes that train: see module docstring


@dataclass(frozen=True)
class CpuPlacement:
    """The CPUs of each training process (by learner name) and, where the other roles are kept off those, the CPUs of
    everything else (``others``; None: the other roles keep every CPU they were given)."""

    trainers: dict[str, frozenset[int]] = field(default_factory=dict)
    others: frozenset[int] | None = None

    def to_env(self) -> str:
        """``learner0=1`` or ``learner0=1;others=0``: what :meth:`from_env` reads."""
        parts = [f"{name}={format_cpus(cpus)}" for name, cpus in sorted(self.trainers.items())]
        return ";".join(parts + ([f"others={format_cpus(self.others)}"] if self.others is not None else []))

    @classmethod
    def from_env(cls, text: str) -> CpuPlacement:
        trainers: dict[str, frozenset[int]] = {}
        others: frozenset[int] | None = None
        for part in filter(None, text.split(";")):
            name, sep, cpus = part.partition("=")
            if not sep or not name:
                raise ValueError(f"{PLACEMENT_ENV}={text!r} (environment variable, set by ding -m parallel): "
                                 f"{part!r} is not NAME=CPUS; unset it to let the OS place the processes")
            parsed = _parse_cpus(cpus, where=f"{PLACEMENT_ENV}={text!r}")
            if not parsed:
                raise ValueError(f"{PLACEMENT_ENV}={text!r} (environment variable, set by ding -m parallel): {name} "
                                 "has no CPUs; unset it to let the OS place the processes")
            if name == "others":
                others = parsed
            else:
                trainers[name] = parsed
        return cls(trainers, others)

    def describe(self) -> str:
        who = ", ".join(f"{name}'s training on CPU {format_cpus(cpus)}" for name, cpus in sorted(self.trainers.items()))
        where = "every CPU" if self.others is None else f"CPU {format_cpus(self.others)}"
        return f"{who}; the other roles on {where}"


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
        if int(pid) == os.getpid():
            continue
        try:
            with open(os.path.join(proc, pid, "comm")) as f:
                if not _TRAINER_COMM.match(f.read().strip()):
                    continue
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


SETTINGS = ("auto", "exclusive", "off")


def plan_placement(setting: str, learners: list[str], threads_per_trainer: int = 1,
                   allowed: frozenset[int] | None = None,
                   reserved: frozenset[int] | None = None) -> tuple[CpuPlacement | None, str]:
    """The placement for a run whose training processes are ``learners`` (one per learner), each running
    ``threads_per_trainer`` torch threads, and a line saying what was decided and why.

    ``'off'``: none. ``'auto'``: each trainer is pinned to CPUs of its own, taken from the end of the allowed set and
    not held by another run's trainer, when at least one allowed CPU is left besides them; the other roles keep every
    CPU (they use the trainer's core while it waits for data). ``'exclusive'``: the same, and the other roles are kept
    off the trainers' CPUs (the learner never shares its core; collection gets the rest only).
    ``allowed`` / ``reserved`` default to this process's affinity and :func:`cpus_reserved_by_other_runs`."""
    if setting == "off":
        return None, "CPU placement off (system_config.cpu_affinity='off'): the OS places every role"
    if setting not in SETTINGS:
        raise ValueError(f"system_config.cpu_affinity must be one of {', '.join(map(repr, SETTINGS))}, got "
                         f"{setting!r}")
    allowed = allowed_cpus() if allowed is None else allowed
    if not allowed:
        return None, "CPU placement: this OS has no CPU affinity; the OS places every role"
    reserved = cpus_reserved_by_other_runs() if reserved is None else reserved
    threads = max(1, threads_per_trainer)
    need = len(learners) * threads
    free = sorted(allowed - reserved)
    if not learners or len(free) < need + 1:
        held = f", {len(allowed & reserved)} held by another run's trainer" if allowed & reserved else ""
        return None, (f"CPU placement: none ({len(allowed)} CPUs{held}; a core of its own for each of {len(learners)} "
                      f"training process(es) needs {need + 1}): the OS places every role")
    take = free[len(free) - need:]
    trainers = {name: frozenset(take[i * threads:(i + 1) * threads]) for i, name in enumerate(learners)}
    others = frozenset(set(free) - set(take)) if setting == "exclusive" else None
    placement = CpuPlacement(trainers, others)
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
    learner ``name``'s training when this process ``trains``, else the other roles' CPUs where the placement keeps
    them apart. The CPUs applied, or None (nothing applied)."""
    text = (os.environ if env is None else env).get(PLACEMENT_ENV, "")
    if not text:
        return None
    placement = CpuPlacement.from_env(text)
    cpus = placement.trainers.get(name) if trains else None
    if cpus is None:  # not a trainer (or a learner the plan did not count)
        cpus = placement.others
    if cpus is None:
        return None
    return cpus if pin_process(cpus) else None
