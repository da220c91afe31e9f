"""What the Slurm launcher reads from Slurm (the job's id, nodes and CPUs) and each role's ``srun`` command: pure
functions and records."""
from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ding.parallel.launch.supervisor import RoleId, roles_of
from ding.utils import ConfigError


def expand_nodelist(text: str) -> list[str]:
    """Slurm's compact host list as names: ``'n[08-10,12],gpu7'`` -> ``n08 n09 n10 n12 gpu7`` (several bracket groups
    multiplied); a malformed list is a ConfigError."""
    depth = 0
    for ch in text:
        depth += (ch == "[") - (ch == "]")
        if depth > 1:
            raise ConfigError(f"Slurm node list {text!r}: nested brackets")
        if depth < 0:
            raise ConfigError(f"Slurm node list {text!r}: ']' without '['")
    if depth:
        raise ConfigError(f"Slurm node list {text!r}: '[' without ']'")
    parts = [p.strip() for p in re.split(r",(?![^\[]*\])", text.strip())]  # the commas outside brackets
    if not all(parts):
        raise ConfigError(f"Slurm node list {text!r}: an empty name")
    return [name for part in parts for name in _expand_one(part, text)]


def _expand_one(name: str, whole: str) -> list[str]:
    m = re.search(r"\[([^\]]*)\]", name)
    if m is None:
        return [name]
    out = []
    for item in m.group(1).split(","):
        lo, sep, hi = item.strip().partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ConfigError(f"Slurm node list {whole!r}: {item!r} is not a number or a range a-b")
        width = len(lo) if lo.startswith("0") else 0
        first, last = int(lo), int(hi) if sep else int(lo)
        if last < first:
            raise ConfigError(f"Slurm node list {whole!r}: range {item!r} runs backwards")
        for i in range(first, last + 1):
            out.extend(_expand_one(f"{name[:m.start()]}{str(i).zfill(width)}{name[m.end():]}", whole))
    return out


def expand_cpus_per_node(text: str) -> list[int]:
    """``SLURM_JOB_CPUS_PER_NODE`` as one count per node: ``'4(x2),2'`` -> ``[4, 4, 2]``."""
    out: list[int] = []
    for item in text.split(","):
        m = re.fullmatch(r"\s*(\d+)(?:\(x(\d+)\))?\s*", item)
        if m is None:
            raise ConfigError(f"SLURM_JOB_CPUS_PER_NODE {text!r}: {item!r} is not N or N(xK)")
        out.extend([int(m.group(1))] * int(m.group(2) or 1))
    return out


@dataclass(frozen=True)
class SlurmJob:
    """The allocation the launcher runs in (``sbatch`` / ``salloc``): its roles become job steps of it."""

    job_id: str
    nodes: tuple[str, ...] = ()
    cpus_per_node: tuple[int, ...] = ()

    @property
    def cpus(self) -> int | None:
        return sum(self.cpus_per_node) if self.cpus_per_node else None

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> SlurmJob | None:
        """The job of ``env``, or None outside an allocation."""
        job_id = env.get("SLURM_JOB_ID") or env.get("SLURM_JOBID")
        if not job_id:
            return None
        nodes = env.get("SLURM_JOB_NODELIST") or env.get("SLURM_NODELIST") or ""
        cpus = env.get("SLURM_JOB_CPUS_PER_NODE") or ""
        return cls(job_id=str(job_id), nodes=tuple(expand_nodelist(nodes)) if nodes else (),
                   cpus_per_node=tuple(expand_cpus_per_node(cpus)) if cpus else ())


@dataclass(frozen=True)
class StepSpec(RoleId):
    """One role's place in Slurm: what its ``srun`` asks for."""

    partition: str | None = None
    node: str | None = None
    cpus: int = 1
    memory: str | None = None
    srun_args: tuple[str, ...] = field(default_factory=tuple)


def step_specs(system: Mapping[str, Any]) -> list[StepSpec]:
    """One :class:`StepSpec` per role of a compiled ``system_config``: the coordinator, the learners, the collectors;
    a role's own ``partition`` / ``node`` / ``cpus`` / ``memory`` win over ``system_config.slurm``'s."""
    slurm = system.get("slurm") or {}
    extra = tuple(str(a) for a in (slurm.get("srun_args") or ()))
    roles = [RoleId("coordinator", "coordinator")] + sorted(
        roles_of(system), key=lambda r: (r.role != "learner", int(r.name[len(r.role):])))
    specs = []
    for role in roles:
        entry = system.get(role.name) or {}
        given = {k: entry.get(k) if entry.get(k) is not None else slurm.get(k)
                 for k in ("partition", "node", "cpus", "memory")}
        specs.append(StepSpec(name=role.name, role=role.role, partition=given["partition"], node=given["node"],
                              cpus=int(given["cpus"] or 1),
                              memory=None if given["memory"] is None else str(given["memory"]), srun_args=extra))
    return specs


def check_fits(specs: Sequence[StepSpec], job: SlurmJob | None) -> None:
    """Inside an allocation, the roles' CPUs must fit in it (else a step waits forever for CPUs)."""
    need = sum(s.cpus for s in specs)
    if job is not None and job.cpus is not None and need > job.cpus:
        per = ", ".join(f"{s.name} {s.cpus}" for s in specs)
        raise ConfigError(f"Slurm job {job.job_id} has {job.cpus} CPUs but the run's {len(specs)} roles ask for "
                          f"{need} ({per}): allocate more (e.g. sbatch --ntasks={len(specs)} --cpus-per-task=...) "
                          "or lower system_config.slurm.cpus / the roles' cpus")


def srun_command(spec: StepSpec, step_name: str, job: SlurmJob | None, command: Sequence[str]) -> list[str]:
    """The ``srun`` that runs ``command`` as ``spec``'s step: one task on one node, with its CPUs, memory, partition
    and node; inside ``job`` a step with exactly its CPUs (``--exact``), so the roles run side by side."""
    cmd = ["srun", f"--job-name={step_name}", "--ntasks=1", "--nodes=1", f"--cpus-per-task={spec.cpus}",
           "--kill-on-bad-exit=1", "--quiet"]
    if job is not None:
        cmd += [f"--jobid={job.job_id}", "--exact"]
    cmd += [f"{flag}={value}" for flag, value in (("--partition", spec.partition), ("--nodelist", spec.node),
                                                  ("--mem", spec.memory)) if value]
    return cmd + list(spec.srun_args) + list(command)
