"""Plot evaluation return over env steps for one or more runs (``ding -m plot``); for league runs
(``serial_pipeline_battle``: ``log/battle_eval.csv``) the win rate against the fixed opponent and the main player's
rating over env steps."""
from __future__ import annotations

import json
import os
import re
from collections import defaultdict
from typing import Any

import numpy as np

from ding.engine.training_view import read_battle_eval_csv, read_eval_csv
from ding.utils import RunDataError

_SEED_SUFFIX = re.compile(r"_seed\d+(_\d{6}_\d{6}(_\d+)?)?$")


def _eval_csv(exp_dir: str) -> str:
    if not os.path.isdir(exp_dir):
        what = "is a file, not a directory" if os.path.exists(exp_dir) else "does not exist"
        raise RunDataError(f"plot: {exp_dir!r} {what}; pass the ./<exp_name>/ directory of a run made by ding "
                           f"(looked in {os.getcwd()})")
    path = os.path.join(exp_dir, "log", "eval.csv")
    if not os.path.isfile(path):
        raise RunDataError(
            f"plot: {exp_dir!r} has no log/eval.csv; pass the directory of a run made by ding "
            "(the ./<exp_name>/ folder of a serial run)"
        )
    return path


def _groups(exp_dirs: list[str]) -> dict[str, list[tuple[str, list[dict[str, float]]]]]:
    """Evaluations of each run (with its directory name), grouped by experiment: runs that differ only by seed
    (``<name>_seed<k>``) together."""
    groups: dict[str, list[tuple[str, list[dict[str, float]]]]] = defaultdict(list)
    for d in exp_dirs:
        rows = read_eval_csv(_eval_csv(d))
        if not rows:
            raise RunDataError(f"plot: {d!r} has no evaluations yet (log/eval.csv is empty)")
        run = os.path.basename(os.path.normpath(d))
        groups[_SEED_SUFFIX.sub("", run)].append((run, rows))
    return groups


def default_output(names: list[str]) -> str:
    """``./eval_return_<names>.png`` in the current directory: a plot never replaces a file inside a run."""
    stem = "_".join(names)
    if len(stem) > 80:
        stem = f"{names[0][:60]}_and_{len(names) - 1}_more"
    return f"eval_return_{stem}.png"


def eval_figure(exp_dirs: list[str], title: str | None = None) -> Any:
    """A matplotlib figure of eval return vs env steps (see :func:`plot_runs`)."""
    return _figure(_groups(exp_dirs), _stop_value(exp_dirs[0]), title)


def _figure(groups: dict[str, list[tuple[str, list[dict[str, float]]]]], stop: float | None,
            title: str | None) -> Any:
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 5.5), dpi=110)
    for name, runs in groups.items():
        if len(runs) == 1:
            run, r = runs[0]
            ax.plot([x["env_step"] for x in r], [x["eval_return_mean"] for x in r], label=run, marker=".")
            continue
        # a seed that ended earlier (e.g. reached the stop value) counts with its last return until the longest seed
        # ends: the label says which seeds, and their ends are marked
        last = [max(x["env_step"] for x in r) for _, r in runs]
        grid = np.linspace(0, max(last), 200)
        ys = np.stack([np.interp(grid, [x["env_step"] for x in r], [x["eval_return_mean"] for x in r])
                       for _, r in runs])
        ids = [_seed_of(run) for run, _ in runs]
        if len(set(ids)) < len(ids):  # one seed run twice (a timestamped directory): name the runs instead
            ids = [run for run, _ in runs]
            what, group = "run", ", ".join(ids)
        else:
            what, group = "seed", f"{name}_seed{{{', '.join(ids)}}}"
        ended = [i for i, end in zip(ids, last) if end < max(last)]
        note = (f"; {what} {', '.join(ended)} ended earlier: its last return is used from its end on (x)" if ended
                else "")
        line, = ax.plot(grid, ys.mean(0), label=f"{group}: mean, band min-max{note}")
        ax.fill_between(grid, ys.min(0), ys.max(0), color=line.get_color(), alpha=0.2)
        for (_, r), end in zip(runs, last):
            if end < max(last):
                ax.plot([end], [r[-1]["eval_return_mean"]], marker="x", color=line.get_color(), linestyle="none")
    if stop is not None:
        ax.axhline(stop, color="grey", linestyle="--", linewidth=1, label=f"stop value {stop:g}")
    ax.set_xlabel("env steps")
    ax.set_ylabel("evaluation return")
    ax.set_title(title or ", ".join(groups))
    ax.grid(alpha=0.3)
    # below the axes, never over the curves (it covered the first ~1,500 env steps of the default run)
    ax.legend(loc="upper left", bbox_to_anchor=(0.0, -0.14), fontsize=8, frameon=False)
    fig.tight_layout()
    return fig


def _seed_of(run: str) -> str:
    m = re.search(r"_seed(\d+)(_\d{6}_\d{6}(_\d+)?)?$", run)
    return m.group(1) if m else run


def plot_runs(exp_dirs: list[str], output: str | None = None, title: str | None = None) -> str:
    """Write a PNG of eval return vs env steps: one line per run; runs that differ only by seed
    (``<name>_seed<k>``) are drawn as their mean with a min-max band. Returns the PNG path.

    League runs (every directory has ``log/battle_eval.csv``) get two panels instead, one line per run: the main
    player's win rate against the first fixed opponent (e.g. the scripted player) and its Elo rating in the league,
    both over env steps; the default output is then ``./league_<experiments>.png``.

    The default output is ``./eval_return_<experiments>.png`` in the current directory, never a run's folder.
    """
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError("plot: matplotlib is needed for plots; install it with pip install 'ding[plot]'") from e

    if all(os.path.isfile(_battle_csv(d)) for d in exp_dirs if os.path.isdir(d)):
        battle = _battle_runs(exp_dirs)
        fig = battle_figure(battle, title)
        output = output or default_output(list(battle)).replace("eval_return_", "league_", 1)
        fig.savefig(output)
        plt.close(fig)
        return output
    groups = _groups(exp_dirs)
    fig = _figure(groups, _stop_value(exp_dirs[0]), title)
    output = output or default_output(list(groups))
    fig.savefig(output, bbox_inches="tight")
    plt.close(fig)
    return output


def _stop_value(exp_dir: str) -> float | None:
    path = os.path.join(exp_dir, "result")
    if os.path.isfile(path):
        with open(path) as f:
            value = json.load(f).get("stop_value")
        return None if value is None or isinstance(value, list) else float(value)
    return None


def _battle_csv(exp_dir: str) -> str:
    return os.path.join(exp_dir, "log", "battle_eval.csv")


def _battle_runs(exp_dirs: list[str]) -> dict[str, list[dict[str, Any]]]:
    """Each league run's evaluations against its first fixed opponent, by run name."""
    runs: dict[str, list[dict[str, Any]]] = {}
    for d in exp_dirs:
        _eval_csv(d)  # the same errors for a missing or foreign directory
        rows = read_battle_eval_csv(_battle_csv(d))
        if not rows:
            raise RunDataError(f"plot: {d!r} has no evaluations yet (log/battle_eval.csv is empty)")
        first = rows[0]["evaluator"]
        runs[os.path.basename(os.path.normpath(d))] = [r for r in rows if r["evaluator"] == first]
    return runs


def battle_figure(runs: dict[str, list[dict[str, Any]]], title: str | None = None) -> Any:
    """A matplotlib figure of league runs: win rate against the first fixed opponent, and the main player's Elo,
    over env steps (one line per run)."""
    import matplotlib.pyplot as plt

    fig, (ax_win, ax_elo) = plt.subplots(2, 1, figsize=(7, 6.5), dpi=110, sharex=True)
    for name, rows in runs.items():
        steps = [r["env_step"] for r in rows]
        opponent = rows[0]["evaluator"]
        ax_win.plot(steps, [r["win_rate"] for r in rows], marker=".", label=f"{name} vs {opponent}")
        ax_elo.plot(steps, [r["rating"] for r in rows], marker=".", label=name)
    ax_win.set_ylabel("win rate (wins / games)")
    ax_win.set_ylim(-0.02, 1.02)
    ax_elo.set_ylabel("main player's Elo in the league")
    ax_elo.set_xlabel("env steps")
    ax_win.set_title(title or ", ".join(runs))
    for ax in (ax_win, ax_elo):
        ax.grid(alpha=0.3)
        ax.legend(loc="best", fontsize=8)
    fig.tight_layout()
    return fig
