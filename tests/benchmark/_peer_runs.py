"""Shared by the benchmarks that run ding next to peer frameworks (Stable-Baselines3, Tianshou): one training run
per process, and the search for an interpreter that imports the peers.

The peers are never project dependencies: they live in a separate venv whose interpreter is passed as
``--peer-python`` (or ``$DING_BENCH_PEER_PYTHON``).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from collections.abc import Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_worker(script: str, framework: str, python: str, worker_args: Sequence[str], timeout: float,
               repo_on_path: bool = True) -> dict:
    """``python script --worker framework *worker_args`` in a fresh process (one torch/OpenMP thread) and a temporary
    directory; returns the last JSON line it printed. A failed run raises with the tail of its output.
    ``repo_on_path=False`` keeps this repository off ``PYTHONPATH`` (a DI-engine venv imports its own ``ding``)."""
    cmd = [python, os.path.abspath(script), "--worker", framework, *worker_args]
    env = dict(os.environ, PYTHONUNBUFFERED="1", OMP_NUM_THREADS="1", DING_TORCH_THREADS="1")
    if repo_on_path:
        env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    with tempfile.TemporaryDirectory() as tmp:
        proc = subprocess.run(cmd, cwd=tmp, env=env, capture_output=True, text=True, timeout=timeout)
    if proc.returncode != 0:
        raise RuntimeError(f"{framework} run failed ({' '.join(worker_args)}):\n{proc.stdout[-2000:]}\n"
                           f"{proc.stderr[-4000:]}")
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if not lines:
        raise RuntimeError(f"{framework} run printed no JSON result ({' '.join(worker_args)}):\n{proc.stdout[-2000:]}")
    return json.loads(lines[-1])


def find_peer_python(given: str | None, modules: Sequence[str]) -> tuple[str | None, str]:
    """The interpreter that imports every one of ``modules``: ``given``, ``$DING_BENCH_PEER_PYTHON``, or this one;
    ``(None, note)`` when none does."""
    candidates = [p for p in (given, os.environ.get("DING_BENCH_PEER_PYTHON"), sys.executable) if p]
    probe_src = "import " + ", ".join(modules)
    for python in candidates:
        try:
            probe = subprocess.run([python, "-c", probe_src], capture_output=True, timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            continue
        if probe.returncode == 0:
            return python, ""
    return None, (f"peer columns skipped: no interpreter here imports {' and '.join(modules)} (install them in a "
                  "separate venv and pass --peer-python)")


# ---------------------------------------------------------------------------------------------------- plots
# A learning curve: [[env_step, wall_s, eval_return], ...]. A line: {"label", "seed", "dashed", "curve"}.
_SEED_COLORS = ("tab:blue", "tab:orange", "tab:green", "tab:red", "tab:purple")


def plot_curves(lines: list[dict], path: str, title: str, ylabel: str, hlines: Sequence[tuple] = ()) -> None:
    """Two panels, eval return vs env steps and vs wall time, one line per run (a seed's colour; peers dashed).
    ``hlines``: ``(value, linestyle)`` reference lines (a target, random play)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4))
    for line in lines:
        steps, walls, rets = ([point[i] for point in line["curve"]] for i in range(3))  # (a 4th: CPU seconds)
        style = dict(color=_SEED_COLORS[line["seed"] % len(_SEED_COLORS)], linestyle="--" if line["dashed"] else "-",
                     marker=".", label=line["label"])
        axes[0].plot(steps, rets, **style)
        axes[1].plot([w / 60 for w in walls], rets, **style)
    for ax, xlabel in zip(axes, ("env steps", "wall time (min), evaluations included")):
        for value, linestyle in hlines:
            ax.axhline(value, color="grey", linewidth=0.8, linestyle=linestyle)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)


def draw_curves(lines: list[dict], path: str, title: str, ylabel: str, hlines: Sequence[tuple],
                python: str | None) -> str:
    """:func:`plot_curves` here, or through ``python`` (a peer interpreter, which has matplotlib through SB3) when
    matplotlib is not importable here (ding's own environment does not need it). Returns the path or why not."""
    import importlib.util

    spec = dict(lines=lines, path=path, title=title, ylabel=ylabel, hlines=[list(h) for h in hlines])
    if importlib.util.find_spec("matplotlib") is not None:
        plot_curves(**spec)
        return path
    if python is None:
        return "no plot: matplotlib is not importable here and there is no peer interpreter"
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump(spec, f)
    try:
        subprocess.run([python, os.path.abspath(__file__), "--plot-from", f.name], check=True, timeout=300)
    finally:
        os.unlink(f.name)
    return path


if __name__ == "__main__":  # the peer interpreter drawing for a driver without matplotlib
    if sys.argv[1:2] != ["--plot-from"] or len(sys.argv) != 3:
        raise SystemExit("usage: _peer_runs.py --plot-from SPEC.json")
    with open(sys.argv[2]) as f:
        plot_curves(**json.load(f))
