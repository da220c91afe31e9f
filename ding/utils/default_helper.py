"""Small helpers used everywhere: dict merging, seeding, timing."""
from __future__ import annotations

import copy
import logging
import os
import random
import time
from typing import Any, Iterable, Mapping

import numpy as np
from easydict import EasyDict


def deep_merge_dicts(original: Mapping, new_dict: Mapping | None) -> EasyDict:
    """Return a new EasyDict: ``original`` updated recursively by ``new_dict`` (neither input is changed)."""
    merged = EasyDict(copy.deepcopy(dict(original)))
    if new_dict:
        deep_update(merged, copy.deepcopy(dict(new_dict)))
    return merged


def deep_update(original: dict, new_dict: Mapping) -> dict:
    """Update ``original`` in place, recursing into nested mappings."""
    for k, v in new_dict.items():
        if isinstance(v, Mapping) and isinstance(original.get(k), Mapping):
            deep_update(original[k], v)
        else:
            original[k] = v
    return original


def config_of(cls: type) -> EasyDict:
    """A component's default config: a deep copy of its class attribute ``config`` with ``cfg_type`` set.

    Components implement ``default_config`` as ``return config_of(cls)``; the ``config`` dict is the one place
    where their keys and defaults are written (each with a comment), and the schema the config validator checks.
    """
    cfg = EasyDict(copy.deepcopy(dict(getattr(cls, "config", {}))))
    cfg.cfg_type = cls.__name__ + "Dict"
    return cfg


def set_pkg_seed(seed: int, use_cuda: bool = False) -> None:
    """Seed python's ``random``, numpy's global RNG and torch (CPU and, if asked, CUDA)."""
    import torch

    random.seed(seed)
    np.random.seed(seed)
    torch.manual_seed(seed)
    if use_cuda and torch.cuda.is_available():
        torch.cuda.manual_seed(seed)


def get_rng_state() -> dict[str, Any]:
    """Snapshot of every global RNG (python, numpy, torch), for exact resume."""
    import torch

    return {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}


def set_rng_state(state: Mapping[str, Any]) -> None:
    import torch

    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])


_THREADS_SET = False  # setup_torch_threads ran: the pipelines' choice stands
_DEFAULT_CHECKED = False  # apply_default_torch_threads ran once in this process
_THREADS_LOG = logging.getLogger("ding.threads")
# what a user sets to choose the thread count themselves; torch reads the last two at start
THREAD_ENV_VARS = ("DING_TORCH_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def setup_torch_threads(num_threads: int | None = None) -> int:
    """Choose torch's CPU thread count.

    The default is 1 thread unless the user asked otherwise (``num_threads`` or ``DING_TORCH_THREADS``). Small RL
    networks gain nothing from intra-op parallelism, and on 2-core machines libgomp's spin-wait makes training with
    the default thread count stall 10-50x intermittently. Returns the count in use.
    """
    import torch

    global _THREADS_SET
    n = num_threads if num_threads else (_env_threads() or 1)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    _THREADS_SET = True
    return n


def _env_threads() -> int | None:
    """``DING_TORCH_THREADS`` as a positive int; None when unset; a clear error for anything else."""
    env = os.environ.get("DING_TORCH_THREADS", "").strip()
    if not env:
        return None
    if not env.isdigit() or int(env) < 1:
        raise ValueError(f"DING_TORCH_THREADS={env!r} (environment variable): give a positive whole number of torch "
                         "CPU threads, e.g. DING_TORCH_THREADS=1, or unset it for ding's default of 1")
    return int(env)


def apply_default_torch_threads() -> None:
    """The pipelines' thread default for a loop built by hand, unless the user already chose a count.

    Called by the constructors of the policy, learner, serial collector, serial evaluator and env manager; only the
    first call in a process does anything (the rest return at once), and nothing happens after
    :func:`setup_torch_threads` ran (the pipelines, CLI, ``Trainer`` and parallel roles). The user has chosen when
    ``DING_TORCH_THREADS`` is set (its count is applied), when ``OMP_NUM_THREADS`` or ``MKL_NUM_THREADS`` is set
    (torch read it at start), or when torch's count differs from the one torch starts with (an explicit
    ``torch.set_num_threads``). Otherwise torch is set to one thread, and one ``ding.threads`` log line says so.
    """
    global _DEFAULT_CHECKED
    if _THREADS_SET or _DEFAULT_CHECKED:
        return
    _DEFAULT_CHECKED = True
    import torch

    if _env_threads():
        setup_torch_threads()
        return
    if any(os.environ.get(var) for var in THREAD_ENV_VARS[1:]):
        return
    current = torch.get_num_threads()
    if current != torch_start_threads():
        return  # torch.set_num_threads was called: the user's count stands
    setup_torch_threads()
    _THREADS_LOG.info(
        "ding set torch to 1 CPU thread (was %d): small networks run fastest so, and a busy machine does not stall "
        "them; to choose, set DING_TORCH_THREADS=N or call torch.set_num_threads(N) before building ding's workers",
        current,
    )


def torch_start_threads() -> int:
    """The intra-op thread count torch picks by itself when no thread variable is set: the machine's physical cores
    (what torch's cpuinfo counts on Linux, else the logical CPUs), at most the CPUs this process may run on."""
    global _START_THREADS
    if _START_THREADS is None:
        n = _physical_cores() or os.cpu_count() or 1
        if hasattr(os, "sched_getaffinity"):  # torch honours a CPU affinity mask (taskset, container cpusets)
            n = min(n, len(os.sched_getaffinity(0)))
        _START_THREADS = n
    return _START_THREADS


_START_THREADS: int | None = None


def _physical_cores() -> int | None:
    """Distinct (package, core) pairs of the present CPUs from Linux sysfs; None where that is not readable."""
    root = "/sys/devices/system/cpu"
    try:
        names = [n for n in os.listdir(root) if n.startswith("cpu") and n[3:].isdigit()]
    except OSError:
        return None
    cores = set()
    for name in names:
        topo = os.path.join(root, name, "topology")
        try:  # an offline CPU has no topology: torch does not count it either
            with open(os.path.join(topo, "physical_package_id")) as f:
                package = f.read().strip()
            with open(os.path.join(topo, "core_id")) as f:
                core = f.read().strip()
        except OSError:
            continue
        cores.add((package, core))
    return len(cores) or None


class EasyTimer:
    """Context-manager timer: ``with timer: ...`` then ``timer.value`` holds the seconds taken."""

    def __init__(self) -> None:
        self.value = 0.0

    def __enter__(self) -> EasyTimer:
        self._start = time.perf_counter()
        return self

    def __exit__(self, *exc: Any) -> None:
        self.value = time.perf_counter() - self._start


def squeeze(data: Any) -> Any:
    """Unwrap a one-element list/tuple/dict."""
    if isinstance(data, (list, tuple)) and len(data) == 1:
        return data[0]
    if isinstance(data, dict) and len(data) == 1:
        return next(iter(data.values()))
    return data


def close_all(closables: Iterable[Any]) -> None:
    """``close()`` each object in order, even if one fails; the first failure is raised after all were tried."""
    first_error: BaseException | None = None
    for obj in closables:
        try:
            obj.close()
        except Exception as e:  # noqa: BLE001 -- close the others first, then report the first failure
            first_error = first_error or e
    if first_error is not None:
        raise first_error
