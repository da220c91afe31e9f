"""torch's CPU thread count: one thread by default, set by the pipelines and by the first worker built by hand.

Small RL networks gain nothing from intra-op parallelism, and on small or busy machines OpenMP's spin-waiting threads
make training stall many times over (docs/benchmarks.md, "thread trap").
"""
from __future__ import annotations

import logging
import os
import threading

_THREADS_SET = False  # setup_torch_threads ran: the pipelines' choice stands
_DEFAULT_CHECKED = False  # apply_default_torch_threads ran once in this process
_THREADS_LOG = logging.getLogger("ding.threads")
# what a user sets to choose the thread count themselves; torch reads the last two at start
THREAD_ENV_VARS = ("DING_TORCH_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")


def setup_torch_threads(num_threads: int | None = None) -> int:
    """Choose torch's CPU thread count.

    The default is 1 thread unless the user asked otherwise (``num_threads`` or ``DING_TORCH_THREADS``). Small RL
    networks gain nothing from intra-op parallelism, and on small machines libgomp's spin-wait makes training with
    the default thread count stall intermittently. Returns the count in use.
    """
    import torch

    global _THREADS_SET
    n = num_threads if num_threads else (_env_threads() or 1)
    if torch.get_num_threads() != n:
        torch.set_num_threads(n)
    _THREADS_SET = True
    return n


def requested_torch_threads() -> int:
    """The torch thread count the roles will use: ``DING_TORCH_THREADS``, else ding's default of 1."""
    return _env_threads() or 1


_PER_THREAD = threading.local()


def torch_threads_in_this_thread() -> None:
    """Apply torch's thread count to the calling thread's OpenMP, once per thread (the later calls return at once).

    OpenMP keeps its thread count per thread: ``torch.set_num_threads(1)`` in the main thread leaves a thread started
    later at OpenMP's default (the machine's cores), and an op that opens a parallel region there wakes a pool whose
    worker then spin-waits between regions, burning a core beside the thread (as a parallel collector's evaluation
    thread did). Call this at the start of every worker thread that runs torch ops."""
    if getattr(_PER_THREAD, "done", False):
        return
    _PER_THREAD.done = True
    import torch

    torch.set_num_threads(torch.get_num_threads())


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
    if current == 1:
        return  # torch started with one thread (a one-core machine): nothing changed, nothing to say
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
