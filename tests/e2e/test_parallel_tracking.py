"""W&B (offline) and MLflow in parallel mode: each figure is tracked by the process that owns it, once -- the
coordinator's (evaluation and collection returns, buffer statistics) and the lead learner's (losses) -- each in a
tracked run of the role's own, grouped under the run's name, with the same series as that role's TensorBoard; a
resumed run continues the same tracked runs."""
from __future__ import annotations

import json
import os

import numpy as np
import pytest

from ..utils._tracked_series import read_mlflow, read_tensorboard, read_wandb, wandb_run_ids
from ._parallel import ding_cmd, processes_mentioning, read_log, result, start, write_config

pytest.importorskip("wandb", reason="the W&B tracker needs the wandb extra: pip install -e '.[wandb]'")
pytest.importorskip("mlflow", reason="the MLflow tracker needs the mlflow extra: pip install -e '.[mlflow]'")

ROLES = ("coordinator", "learner0")


def _f32(series):
    return {k: sorted((s, float(np.float32(v))) for s, v in pts) for k, pts in series.items()}


@pytest.mark.timeout(360)
def test_each_role_tracks_its_own_figures_once_and_a_resume_continues_the_same_runs(workdir):
    from mlflow.tracking import MlflowClient

    exp = "ptracked"
    uri = f"sqlite:///{os.path.join(str(workdir), 'mlflow.db')}"
    logger = {"types": ["tensorboard", "wandb", "mlflow"], "mlflow": {"tracking_uri": uri, "experiment": exp}}
    hook = {"log_show_after_iter": 20}  # the learner's scalars every 20 iterations: several in each session
    cfg = write_config(workdir, exp, main={"env": {"stop_value": 1e9}, "logger": logger,
                                           "policy": {"learn": {"learner": {"hook": hook}}}})
    first = start(ding_cmd("-m", "parallel", "-c", cfg, "--train-iter", "80"), workdir)
    assert first.wait(timeout=180) == 0, read_log(workdir)
    log_dir = os.path.join(str(workdir), exp, "log")

    def ids():
        out = {}
        for role in ROLES:
            with open(os.path.join(log_dir, role, "tracking.json")) as f:
                out[role] = json.load(f)
        return out

    ids1 = ids()
    second = start(ding_cmd("-m", "parallel", "-c", cfg, "--train-iter", "160", "--resume"), workdir)
    assert second.wait(timeout=180) == 0, read_log(workdir)
    assert result(workdir, exp)["train_iter"] >= 160
    assert ids() == ids1  # the resumed roles reopened their tracked runs

    client = MlflowClient(tracking_uri=uri)
    runs = client.search_runs([client.get_experiment_by_name(exp).experiment_id])
    assert sorted(r.data.tags["ding.role"] for r in runs) == sorted(ROLES)  # one tracked run per role, no more
    assert {r.data.tags["ding.run"] for r in runs} == {exp}
    assert {r.info.run_id for r in runs} == {ids1[role]["mlflow"]["run_id"] for role in ROLES}
    assert wandb_run_ids(os.path.join(log_dir, "wandb")) == {ids1[role]["wandb"]["run_id"] for role in ROLES}
    for role in ROLES:
        tb = _f32(read_tensorboard(os.path.join(log_dir, role)))
        assert tb, role
        ml = _f32(read_mlflow(uri, ids1[role]["mlflow"]["run_id"], sorted(tb)))
        wb = _f32(read_wandb(os.path.join(log_dir, "wandb"), ids1[role]["wandb"]["run_id"]))
        assert ml == tb, role
        assert wb == tb, role
    learner_tb = read_tensorboard(os.path.join(log_dir, "learner0"))
    loss_steps = [s for s, _ in learner_tb["learner_iter/total_loss"]] if "learner_iter/total_loss" in learner_tb \
        else [s for tag, pts in learner_tb.items() if tag.endswith("total_loss") for s, _ in pts]
    assert loss_steps and len(loss_steps) == len(set(loss_steps)) and max(loss_steps) >= 80  # both sessions, once
    coordinator_tags = set(read_tensorboard(os.path.join(log_dir, "coordinator")))
    assert "evaluator_step/eval_episode_return_mean" in coordinator_tags
    assert not coordinator_tags & set(learner_tb)  # no figure tracked by two processes
    assert not processes_mentioning(str(workdir))
