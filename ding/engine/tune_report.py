"""What a search leaves in its directory: the results table, Optuna's plots as PNG, the best config as a runnable
config file. Everything is read from the study (its SQLite file), so any worker can write it and the last one to
finish writes the complete version; each file is replaced atomically."""
from __future__ import annotations

import csv
import io
import math
import os
from collections.abc import Mapping
from typing import Any

from ding.config import save_config
from ding.utils import atomic_write, atomic_write_text

from .tune_space import apply_params

TABLE_FIELDS = ("number", "state", "value", "env_step", "train_iter", "evaluations", "run_dir")


def trials_table(study: Any) -> tuple[list[str], list[list[Any]]]:
    """The header and one row per trial: number, state, value, env steps, iterations, evaluations, its run
    directory, then each parameter."""
    names = sorted({k for t in study.trials for k in t.params})
    rows = []
    for t in sorted(study.trials, key=lambda t: t.number):
        attrs = t.user_attrs
        rows.append([t.number, t.state.name, t.value, attrs.get("env_step"), attrs.get("train_iter"),
                     len(t.intermediate_values), attrs.get("run_dir")] + [t.params.get(n) for n in names])
    return list(TABLE_FIELDS) + names, rows


def write_table(study: Any, path: str) -> str:
    header, rows = trials_table(study)
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(header)
    w.writerows(rows)
    atomic_write_text(path, buf.getvalue())
    return path


def format_table(study: Any, limit: int = 40) -> str:
    """The results table as text, best trials first."""
    header, rows = trials_table(study)
    rows = sorted(rows, key=lambda r: (r[2] is None, -(r[2] if r[2] is not None else 0.0), r[0]))[:limit]
    cells = [[_cell(v) for v in r] for r in [header, *rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(header))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)).rstrip() for row in cells)


def _cell(v: Any) -> str:
    if isinstance(v, float):
        return "nan" if math.isnan(v) else f"{v:.4g}"
    return "" if v is None else str(v)


def write_plots(study: Any, out_dir: str) -> dict[str, str]:
    """Optuna's optimisation history and parameter importances (matplotlib) as PNG; a plot that the study cannot
    make yet (importances need two finished trials that differ) is left out, with the reason in the returned dict."""
    import warnings

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from optuna.visualization import matplotlib as ovm

    made: dict[str, str] = {}
    for name, plot in (("history", ovm.plot_optimization_history), ("importance", ovm.plot_param_importances)):
        path = os.path.join(out_dir, f"{name}.png")
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # Optuna marks its matplotlib plots experimental
                ax: Any = plot(study)
            fig: Any = ax.figure
            fig.set_size_inches(8, 5)
            fig.tight_layout()
            buf = io.BytesIO()
            fig.savefig(buf, format="png", dpi=100)
            plt.close(fig)
            atomic_write(path, buf.getvalue())
            made[name] = path
        except (ValueError, RuntimeError, ZeroDivisionError) as e:  # too few finished trials for this plot
            made[name] = f"not drawn: {e}"
    return made


def best_trial(study: Any) -> Any:
    """The completed trial of the highest value; among equal values (several trials at the stop value), the one that
    needed the fewest env steps. None while no trial has completed."""
    from optuna.trial import TrialState

    done = [t for t in study.trials if t.state == TrialState.COMPLETE and t.value is not None]
    if not done:
        return None
    return min(done, key=lambda t: (-t.value, t.user_attrs.get("env_step", float("inf")), t.number))


def write_best_config(study: Any, main_cfg: Mapping[str, Any], create_cfg: Mapping[str, Any], path: str,
                      exp_name: str) -> dict[str, Any] | None:
    """The user's config with the :func:`best_trial`'s parameters, as a config file ``ding -m serial -c`` runs;
    None while no trial has completed."""
    best = best_trial(study)
    if best is None:
        return None
    cfg = apply_params(main_cfg, best.params)
    cfg.exp_name = exp_name
    save_config(cfg, path, create_cfg=create_cfg)
    with open(path, encoding="utf-8") as f:
        body = f.read()
    header = (f"# The best trial ({best.number}, value {best.value:.6g}) of study '{study.study_name}':\n"
              + "".join(f"#   {k} = {v!r}\n" for k, v in sorted(best.params.items())))
    atomic_write_text(path, header + body)
    return dict(best.params)
