"""``compile_config_parallel``: main + create + system config of parallel mode, validated, with every role laid out.

The compiled result is ``EasyDict(main=..., system=..., seed=...)``. ``system`` holds the coordinator's settings,
the shared directories and one entry per role (``learner0``, ``collector0``, ``collector1``, ...) with its comm type,
host and port — DI-engine's layout, so its parallel config files compile unchanged.
"""
from __future__ import annotations

import copy
import difflib
import os
import re
from collections.abc import Mapping
from typing import Any

from easydict import EasyDict

from ding.utils import (
    COMM_COLLECTOR_REGISTRY,
    COMM_LEARNER_REGISTRY,
    COMMANDER_REGISTRY,
    PARALLEL_COLLECTOR_REGISTRY,
    ConfigError,
    deep_merge_dicts,
)

from .compiler import compile_config
from .components import PARTS, Part, check_import_names, default_config_of, lookup_type
from .ranges import Constraint, at_least, between, find_range_problems, greater_than
from .validation import find_config_problems, format_problems

# Parallel mode swaps the serial collector and commander for the parallel ones.
PARALLEL_PARTS: tuple[Part, ...] = tuple(
    Part("collector", p.place, PARALLEL_COLLECTOR_REGISTRY, "zergling") if p.name == "collector" else
    Part("commander", p.place, COMMANDER_REGISTRY, "solo") if p.name == "commander" else p
    for p in PARTS
)
_COMM_PARTS = {
    "comm_learner": Part("comm_learner", "system.comm_learner", COMM_LEARNER_REGISTRY, "flask_fs"),
    "comm_collector": Part("comm_collector", "system.comm_collector", COMM_COLLECTOR_REGISTRY, "flask_fs"),
}

# Keys of DI-engine's parallel configs that live in the main config.
PARALLEL_MAIN_EXTRA = dict(
    env=dict(
        collector_episode_num=None,  # accepted for DI-engine configs; collector tasks are sized by collect.n_sample
        evaluator_episode_num=None,  # accepted for DI-engine configs; evaluations run env.n_evaluator_episode episodes
    ),
    policy=dict(
        learn=dict(learner=dict(
            learner_num=1,  # learner processes; > 1: a group sharing gradients (docs/distributed.md, Several learners)
            send_policy_freq=1,  # publish the policy for the collectors every N train iterations (at most 20 a second)
        )),
        collect=dict(collector=dict(
            collector_num=2,  # collector processes `ding -m parallel` starts (more may join later)
        )),
    ),
)

# The coordinator's settings (``system_config.coordinator``); the Coordinator uses them as its defaults.
COORDINATOR_CONFIG = dict(
    host="127.0.0.1",  # address the coordinator's HTTP server binds
    port=0,  # 0: a free port
    advertise_host=None,  # address slaves use to reach the coordinator (default: host)
    collector_task_timeout=30.0,  # seconds: deadline of one collect task (a timed-out task is cancelled)
    eval_task_timeout=120.0,  # seconds: deadline of one evaluation (n_evaluator_episode whole episodes)
    learner_task_timeout=600.0,  # seconds: deadline of one learner task; half of it without a train iteration while
    # data is ready: the learner is stuck and restarted
    heartbeat_timeout=10.0,  # seconds without a heartbeat after which a slave is lost and its tasks fail; a slave
    # beats every tenth of it and gives up on a coordinator it cannot reach for six of them
    startup_timeout=120.0,  # seconds to wait for a learner and a collector before giving up
    operator_server=dict(),  # accepted for DI-engine configs (its k8s operator); unused
    learner=dict(),  # slaves to connect at start, {name: [name, host, port]}; others join by themselves
    collector=dict(),
    partition=None,  # -P slurm: the coordinator step's partition, node, CPUs and memory (None: system_config.slurm's)
    node=None,
    cpus=None,
    memory=None,
)

# ``-P slurm``: how the launcher places every role's step (a role's own partition/node/cpus/memory win).
SLURM_CONFIG: dict[str, Any] = dict(
    partition=None,  # srun --partition of every step (None: the cluster's default, or the job's)
    cpus=1,  # srun --cpus-per-task of every step
    memory=None,  # srun --mem of every step, e.g. '4G' or 4096 (MB); None: Slurm's default
    srun_args=[],  # more srun arguments for every step, e.g. ['--account=rl', '--time=02:00:00']
    start_timeout=300.0,  # seconds to wait for the coordinator's step to start and announce its address
)

SYSTEM_CONFIG = dict(
    coordinator=COORDINATOR_CONFIG,
    path_data=None,  # shared directory of data files; None: ./<exp_name>/data
    path_policy=None,  # shared directory of the policy file; None: ./<exp_name>/policy
    auth_token=None,  # shared secret of every request; None: env DING_AUTH_TOKEN (`ding -m parallel` makes one)
    communication_mode="auto",  # accepted for DI-engine configs; 'auto' is the only mode
    learner_gpu_num=1,  # accepted for DI-engine configs; one learner process (GPU training follows policy.cuda)
    max_restarts=3,  # `ding -m parallel` restarts a crashed learner/collector process at most this many times
    comm_learner=dict(type="flask_fs", import_names=[]),
    comm_collector=dict(type="flask_fs", import_names=[]),
    slurm=SLURM_CONFIG,
)
PLATFORMS = ("local", "slurm")
# Keys ding once took and no longer does, with what replaced them: a config that still sets one is told so, not
# "unknown key" (DI-engine's configs never had these). ``learnerN.`` / ``collectorN.``: a key of any such role entry.
_HEARTBEAT = ("derived from coordinator.heartbeat_timeout: a slave beats every tenth of it "
              "(HEARTBEATS_PER_TIMEOUT, ding/parallel/transport/slave.py)")
_MASTER_LOST = ("derived from coordinator.heartbeat_timeout: a slave gives up on a coordinator it cannot reach for "
                "six of them (MASTER_LOST_TIMEOUTS, ding/parallel/transport/slave.py)")
REMOVED_SYSTEM_KEYS = {
    "cpu_affinity": "the OS places every process of the run: the placement governor gained nothing in the 8-seed "
                    "A/B of docs/benchmarks.md and was deleted",
    "collector_nice": "reniced collectors made runs slower in the A/B (docs/benchmarks.md); collectors keep the "
                      "launcher's priority",
    "role_start": "`ding -m parallel` forks its roles, and exec's them where a fork cannot serve (policy.cuda, "
                  "threads already running, restarts); an A/B benchmark sets DING_PARALLEL_OFF=role_fork",
    "heartbeat_interval": _HEARTBEAT,
    "master_lost_timeout": _MASTER_LOST,
    **{f"{role}N.{key}": why for role in ("learner", "collector")
       for key, why in (("heartbeat_interval", _HEARTBEAT), ("master_lost_timeout", _MASTER_LOST))},
    "learnerN.train_process": "the learner trains in its own process; a forked training process gained nothing in "
                              "the A/B of docs/benchmarks.md",
    "learnerN.prefetch_batches": "the coordinator keeps a fixed PREFETCH_BATCHES = 4 batches queued at a learner, "
                                 "ding/parallel/roles/learner/flask_fs.py",
    "learnerN.sample_cache_size": "the learner keeps up to replay_buffer_size decoded samples, bounded by its "
                                  "sample_cache_mb",
    "learnerN.max_sample_mb": "what a data file may decode to is capped by the learner's max_data_file_mb",
    "coordinator.buffer_save_interval": "the coordinator saves the buffers' state at evaluations at most every 5 s "
                                        "(BUFFER_SAVE_INTERVAL_S, ding/parallel/coordinator/buffers.py) and always "
                                        "at the end",
    "coordinator.data_wait": "a learner's data request waits a fixed 0.5 s (DEMAND_WAIT_S, "
                             "ding/parallel/coordinator/learner_link.py)",
    "coordinator.learner_stall_timeout": "derived from coordinator.learner_task_timeout: a learner with data ready "
                                         "and no train iteration for half of it is restarted (STALL_SHARE, "
                                         "ding/parallel/coordinator/watchdogs.py)",
}
# Keys of the main config that parallel mode once took and no longer does, with what replaced them.
_COMMANDER = "policy.other.commander."
_ONE_EVAL_TASK = ("every evaluation is one task on one collector (splitting it over the collectors was measured "
                  "slower, docs/benchmarks.md)")
REMOVED_MAIN_KEYS = {
    "policy.learn.learner.send_policy_interval": "the learner publishes its policy every send_policy_freq train "
                                                 "iterations, at most every 0.05 s (SEND_POLICY_INTERVAL_S, "
                                                 "ding/parallel/roles/learner/flask_fs.py)",
    "policy.collect.collector.samples_per_file": "a collect task's samples go to one data file, split only past the "
                                                 "file size cap",
    _COMMANDER + "eval_task_space": "one evaluation runs at a time per two connected collectors",
    _COMMANDER + "eval_lead": "the learner waits for the next evaluation once it is 2 eval_freq periods past the "
                              "last one (EVAL_LEAD, ding/parallel/commanders/pacing.py)",
    _COMMANDER + "eval_shards": _ONE_EVAL_TASK,
    _COMMANDER + "eval_split_after_s": _ONE_EVAL_TASK,
    _COMMANDER + "eval_split_env_share": _ONE_EVAL_TASK,
    _COMMANDER + "collect_ahead_samples": "collection runs at most max(batch_size, 2 x n_sample x collectors) "
                                          "samples ahead of training (ding/parallel/commanders/pacing.py)",
}
_ROLE_KEY = re.compile(r"^(learner|collector)\d+$")
_PORT = between(0, 65535, integer=True, hint="0 picks a free port")


class _SlurmMemory:
    """srun --mem: a whole number of MB, or a string like '512M' / '4G'."""

    def problem(self, value: Any) -> str | None:
        if isinstance(value, int) and not isinstance(value, bool) and value >= 1:
            return None
        if isinstance(value, str) and re.fullmatch(r"\d+[KMGT]?", value.strip()) and int(re.sub(r"\D", "", value)):
            return None
        return f"{value!r} is not a memory size for srun --mem (a number of MB >= 1, or e.g. '512M', '4G')"


_PLACEMENT_KEYS = ("partition", "node", "cpus", "memory")  # a role's step under -P slurm (DI-engine: node, partition)
_CPUS = at_least(1, integer=True, hint="srun --cpus-per-task")
_PLACEMENT_RANGES: dict[str, Constraint] = {"cpus": _CPUS, "memory": _SlurmMemory()}
# Allowed values of the system config (checked on the laid-out config, so flags such as --coordinator-port count).
SYSTEM_RANGES: dict[str, Constraint] = {
    "coordinator.port": _PORT,
    **{f"coordinator.{k}": greater_than(0) for k in (
        "collector_task_timeout", "eval_task_timeout", "learner_task_timeout", "heartbeat_timeout", "startup_timeout")},
    "max_restarts": at_least(0, integer=True),
    "slurm.start_timeout": greater_than(0),
    **{f"slurm.{k}": c for k, c in _PLACEMENT_RANGES.items()},
    **{f"coordinator.{k}": c for k, c in _PLACEMENT_RANGES.items()},
}
_ROLE_RANGES: dict[str, Constraint] = {"port": _PORT, **_PLACEMENT_RANGES}


def compile_config_parallel(
    cfg: Mapping,
    create_cfg: Mapping,
    system_cfg: Mapping,
    seed: int = 0,
    save_cfg: bool = True,
    save_path: str = "total_config.py",
    platform: str = "local",
    coordinator_host: str | None = None,
    learner_host: str | None = None,
    collector_host: str | None = None,
    coordinator_port: int | None = None,
    learner_port: int | None = None,
    collector_port: int | None = None,
    *,
    source: str | None = None,
    renew_dir: bool = True,
) -> EasyDict:
    """Compile a parallel-mode config; returns ``EasyDict(main=..., system=..., seed=...)``.

    The main config compiles as in serial mode, with the parallel collector (``zergling``) and commander (``solo``)
    registries. The system config is checked against :data:`SYSTEM_CONFIG` (typos name the closest key) and gets
    one entry per role. Saved (``save_cfg``) to ``./<exp_name>/total_config.py`` with all three sections.
    """
    src = os.fspath(source) if source else "<dict>"
    if platform not in PLATFORMS:
        raise ConfigError(f"platform {platform!r}: parallel mode runs on {' or '.join(map(repr, PLATFORMS))} (k8s is "
                          "not built)")
    create = EasyDict(copy.deepcopy(dict(create_cfg or {})))
    comm_types = {name: _comm_type(name, create.pop(name, None), system_cfg, src) for name in _COMM_PARTS}
    user_system = EasyDict(copy.deepcopy(dict(system_cfg or {})))
    roles = {k: user_system.pop(k) for k in list(user_system) if _ROLE_KEY.match(str(k))}
    problems = find_config_problems(user_system, SYSTEM_CONFIG, ["coordinator.learner", "coordinator.collector",
                                                                 "coordinator.operator_server", "slurm.srun_args"],
                                    src,
                                    shown_path="system_config", removed=REMOVED_SYSTEM_KEYS)
    if problems:
        raise ConfigError(format_problems(problems))
    system = deep_merge_dicts(SYSTEM_CONFIG, user_system)
    _check_system_values(system, roles, dict(coordinator=coordinator_port, learner=learner_port,
                                             collector=collector_port), src)
    if system.communication_mode != "auto":
        raise ConfigError(f"system_config.communication_mode: only 'auto' exists, got {system.communication_mode!r}")
    original_exp = str(cfg.get("exp_name") or "default_experiment")

    def build_system(main: EasyDict) -> EasyDict:
        return _layout(main, system, roles, comm_types, original_exp, platform,
                       dict(coordinator=(coordinator_host, coordinator_port), learner=(learner_host, learner_port),
                            collector=(collector_host, collector_port)), src)

    _refuse_removed_main_keys(cfg, src)
    holder: dict[str, EasyDict] = {}
    main = compile_config(cfg, seed=seed, auto=True, create_cfg=create, save_cfg=save_cfg, save_path=save_path,
                          renew_dir=renew_dir, source=source, parts=PARALLEL_PARTS, extra_defaults=PARALLEL_MAIN_EXTRA,
                          system_cfg=lambda m: holder.setdefault("system", build_system(m)))
    return EasyDict(main=main, system=holder["system"], seed=seed)


def _refuse_removed_main_keys(cfg: Mapping, src: str) -> None:
    problems = []
    for path, why in REMOVED_MAIN_KEYS.items():
        node: Any = cfg
        for part in path.split("."):
            if not isinstance(node, Mapping) or part not in node:
                break
            node = node[part]
        else:
            problems.append(f"main_config.{path}: this key was removed ({why}); delete it (in {src})")
    if problems:
        raise ConfigError(format_problems(problems))


def _comm_type(name: str, section: Any, system_cfg: Mapping | None, src: str) -> EasyDict:
    part = _COMM_PARTS[name]
    given = (system_cfg or {}).get(name) or {}
    section = section if section is not None else given
    if not isinstance(section, Mapping):
        raise ConfigError(f"create_config.{name}: expected dict(type=..., import_names=[...]), got {section!r} ({src})")
    type_name = section.get("type") or part.default_type
    imports = check_import_names(section.get("import_names"), f"create_config.{name}.import_names (in {src})")
    cls = lookup_type(part, type_name, imports, f"create_config.{name}.type (in {src})")
    return EasyDict(type=type_name, import_names=imports, keys=sorted((default_config_of(cls) or {}).keys()))


def _under_exp(path: Any, original_exp: str, exp_name: str, default: str) -> str:
    """A directory of the system config, following the experiment directory if compile_config renamed it."""
    if not path:
        return os.path.join(".", exp_name, default)
    path = str(path)
    for prefix in (f"./{original_exp}/", f"{original_exp}/"):
        if original_exp != exp_name and path.startswith(prefix):
            rest = path[len(prefix):]
            return os.path.join(exp_name, rest) if os.path.isabs(exp_name) else os.path.join(".", exp_name, rest)
    return path


def _layout(main: EasyDict, system: EasyDict, roles: dict, comm_types: dict, original_exp: str, platform: str,
            addresses: dict, src: str) -> EasyDict:
    learner_num = int(main.policy.learn.learner.get("learner_num", 1))
    collector_num = int(main.policy.collect.collector.get("collector_num", 1))
    if learner_num < 1:
        raise ConfigError(f"policy.learn.learner.learner_num: must be >= 1, got {learner_num} ({src})")
    if learner_num > 1 and comm_types["comm_learner"].type != "flask_fs":
        raise ConfigError(f"policy.learn.learner.learner_num: {learner_num} learners share gradients through "
                          f"ding's LearnerAggregator, which is a 'flask_fs' comm learner; create_config.comm_learner "
                          f"is {comm_types['comm_learner'].type!r} ({src}): use 'flask_fs' or learner_num=1")
    if collector_num < 1:
        raise ConfigError(f"policy.collect.collector.collector_num: must be >= 1, got {collector_num} ({src})")
    out = EasyDict(copy.deepcopy(dict(system)))
    out.path_data = _under_exp(system.path_data, original_exp, main.exp_name, "data")
    out.path_policy = _under_exp(system.path_policy, original_exp, main.exp_name, "policy")
    allowed = {role: set(comm_types[f"comm_{role}"].pop("keys")) | {"type", "import_names", "path_data", "path_policy",
                                                                   *_PLACEMENT_KEYS}
               for role in ("learner", "collector")}
    allowed["learner"].add("group_timeout")  # several learners (ding/parallel/roles/learner_group/aggregator.py)
    for keys in allowed.values():
        keys.discard("heartbeat_timeout")  # the coordinator's, given to every role by its launcher
    out.comm_learner, out.comm_collector = comm_types["comm_learner"], comm_types["comm_collector"]
    problems = []
    for name, entry in roles.items():
        role = "learner" if name.startswith("learner") else "collector"
        if not isinstance(entry, Mapping):
            problems.append(f"system_config.{name}: expected a dict of the {role}'s settings, got {entry!r} ({src})")
            continue
        for key in entry:
            removed = REMOVED_SYSTEM_KEYS.get(f"{role}N.{key}")
            if key not in allowed[role] and removed:
                problems.append(f"system_config.{name}.{key}: this key was removed ({removed}); delete it (in {src})")
            elif key not in allowed[role]:
                close = difflib.get_close_matches(str(key), sorted(allowed[role]), n=1, cutoff=0.6)
                hint = f"did you mean '{close[0]}'?" if close else f"valid keys: {', '.join(sorted(allowed[role]))}"
                problems.append(f"system_config.{name}.{key}: unknown key ({src}); {hint}")
    if problems:
        raise ConfigError(format_problems(problems))
    if platform == "slurm":  # every role binds and advertises its node's address on the cluster network, found at
        if out.coordinator.host == "127.0.0.1":  # start ('auto'); loopback cannot reach other nodes
            out.coordinator.host = "auto"
        if out.coordinator.advertise_host is None:
            out.coordinator.advertise_host = "auto"
    host, port = addresses["coordinator"]
    if host is not None:
        out.coordinator.host = host
    if port is not None:
        out.coordinator.port = int(port)
    for role, count, comm in (("learner", learner_num, out.comm_learner),
                              ("collector", collector_num, out.comm_collector)):
        host, port = addresses[role]
        for i in range(count):
            name = f"{role}{i}"
            entry = EasyDict(type=comm.type, import_names=list(comm.import_names), host="127.0.0.1", port=0,
                             path_data=out.path_data, path_policy=out.path_policy)
            if platform == "slurm":
                entry.host, entry.advertise_host = "auto", "auto"
            if role == "learner" and learner_num > 1:  # a group: learner0 leads, the others follow it
                entry.learner_num, entry.learner_rank = learner_num, i
            entry.update(roles.get(name) or {})
            if host is not None:
                entry.host = host
            if port is not None:
                entry.port = int(port) + i
            if entry.port in ("auto", None):
                entry.port = 0
            out[name] = entry
            if entry.port and (role == "collector" or i == 0):  # a fixed address: the coordinator connects it
                # (port 0: the role joins by itself; learner1.. talk to learner0 only, never to the coordinator)
                out.coordinator[role][name] = [name, entry.get("advertise_host") or entry.host, int(entry.port)]
    for name, entry in roles.items():
        if name not in out:
            out[name] = EasyDict(entry)
    return out


def _check_system_values(system: EasyDict, roles: Mapping[str, Any], ports: Mapping[str, int | None],
                         src: str) -> None:
    """Every out-of-range value at once, before anything is written or started: a bad port or a zero timeout would
    otherwise show up as a crash deep in a server, or as slaves declared lost the moment they connect."""
    problems = find_range_problems(system, SYSTEM_RANGES, "system_config", src)
    for name, entry in roles.items():
        if isinstance(entry, Mapping):
            problems += find_range_problems(entry, _ROLE_RANGES, f"system_config.{name}", src)
    for role, port in ports.items():
        if port is not None:
            wrong = _PORT.problem(port)
            problems += [f"--{role}-port: {wrong}"] if wrong else []
    if problems:
        raise ConfigError(format_problems(problems))


def rename_experiment(main: Mapping, system: Mapping, exp_name: str) -> None:
    """Give a parallel config a new ``exp_name`` (``-s N``, ``--exp-name``); ``path_data`` / ``path_policy`` under the
    old experiment directory move with it."""
    old = str(main.get("exp_name") or "default_experiment")
    main["exp_name"] = exp_name  # type: ignore[index]
    for key in ("path_data", "path_policy"):
        path = system.get(key)
        if isinstance(path, str):
            system[key] = _under_exp(path, old, exp_name, key[5:])  # type: ignore[index]
