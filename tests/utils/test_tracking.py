"""W&B (offline) and MLflow beside TensorBoard on a CartPole DQN run: the same scalar series (steps and values, read
back with wandb's own reader and MLflow's client), the compiled config as parameters, the result at the end, one
continuous series over a pause and resume, and a broken logger that costs one warning and not the run."""
from __future__ import annotations

import copy
import json
import os
import socket
import warnings

import numpy as np
import pytest

import ding
from ding.entry import serial_pipeline

from ._tracked_series import read_mlflow, read_tensorboard, read_wandb, wandb_records, wandb_run_ids

wandb = pytest.importorskip("wandb", reason="the W&B tracker needs the wandb extra: pip install -e '.[wandb]'")
mlflow = pytest.importorskip("mlflow", reason="the MLflow tracker needs the mlflow extra: pip install -e '.[mlflow]'")

# scalars that measure time: their steps must match, their values differ between two runs of one seed
TIMED = ("envstep_per_sec", "sample_per_sec", "train_time")


def _cfg(exp_name, uri, types=("tensorboard", "wandb", "mlflow"), **mlflow_cfg):
    from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config

    main, create = copy.deepcopy(main_config), copy.deepcopy(create_config)
    main.exp_name = exp_name
    main.policy.learn.learner = dict(hook=dict(log_show_after_iter=100))
    main.logger = dict(types=list(types), mlflow=dict(tracking_uri=uri, experiment=exp_name, **mlflow_cfg))
    return main, create


def _f32(series):
    """TensorBoard keeps float32 values: compare every series at that precision, as a sorted list (a duplicated or
    missing step shows)."""
    return {k: sorted((s, float(np.float32(v))) for s, v in pts) for k, pts in series.items()}


def _mlflow_runs(uri, experiment):
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    return client, client.search_runs([client.get_experiment_by_name(experiment).experiment_id])


@pytest.fixture(scope="module")
def tracked(tmp_path_factory):
    """One CartPole DQN run of 300 iterations with TensorBoard, W&B and MLflow: where each put its records."""
    root = tmp_path_factory.mktemp("tracked")
    cwd = os.getcwd()
    os.chdir(root)
    uri = f"sqlite:///{root}/mlflow.db"
    try:
        serial_pipeline(_cfg("full", uri), seed=0, max_train_iter=300)
    finally:
        os.chdir(cwd)
    exp = os.path.join(root, "full")
    (run_id,) = wandb_run_ids(os.path.join(exp, "log", "wandb"))
    return {"root": root, "exp": exp, "uri": uri, "wandb_id": run_id,
            "tb": _f32(read_tensorboard(os.path.join(exp, "log", "serial")))}


def test_wandb_and_mlflow_record_the_tensorboard_series_config_and_result(tracked):
    tb, exp = tracked["tb"], tracked["exp"]
    assert {"learner_step/total_loss", "evaluator_step/episode_return_mean", "collector_step/envstep_per_sec",
            "buffer_iter/count"} <= set(tb)
    wb = _f32(read_wandb(os.path.join(exp, "log", "wandb"), tracked["wandb_id"]))
    client, runs = _mlflow_runs(tracked["uri"], "full")
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    ml = _f32(read_mlflow(tracked["uri"], runs[0].info.run_id, sorted(tb)))
    assert wb == tb
    assert ml == tb
    # the compiled config as parameters
    with open(os.path.join(exp, "result")) as f:
        result = json.load(f)
    params = runs[0].data.params
    assert params["policy.learn.batch_size"] == "64" and params["env.stop_value"] == "195"
    records = wandb_records(os.path.join(exp, "log", "wandb"), tracked["wandb_id"])
    (config,) = [r["run"]["config"]["update"] for r in records if r["type"] == "run"]
    assert config["policy.learn.learning_rate"] == 0.001 and config["exp_name"] == "full"
    # the result at the end
    local = client.download_artifacts(runs[0].info.run_id, "result.json", str(tracked["root"]))
    with open(local) as f:
        assert json.load(f) == result
    summary: dict = {}
    for r in records:
        if r["type"] == "summary":
            summary.update(r["summary"].get("update", {}))
    assert summary["result/ended"] == "limit" and summary["result/env_step"] == result["env_step"]


def test_a_paused_and_resumed_run_is_one_continuous_series(in_tmp_dir, tracked):
    """Closed after a few rounds (a checkpoint, like Ctrl-C), restored, trained to the end: one W&B run, one MLflow
    run, each with exactly the uninterrupted run's steps (and its values, timings aside)."""
    uri = f"sqlite:///{os.path.abspath('mlflow.db')}"
    trainer = ding.Trainer(_cfg("split", uri), seed=0, max_train_iter=300)
    while trainer.train_iter < 200:  # a multiple of log_show's window (100): its means are not part of a checkpoint
        trainer.train()
    assert not trainer.done and trainer.train_iter == 200
    trainer.close()
    _, runs = _mlflow_runs(uri, "split")
    assert [r.info.status for r in runs] == ["KILLED"]  # paused
    with ding.Trainer.restore("split", max_train_iter=300) as trainer:
        trainer.run()
    client, runs = _mlflow_runs(uri, "split")
    assert len(runs) == 1 and runs[0].info.status == "FINISHED"
    (run_id,) = wandb_run_ids(os.path.join("split", "log", "wandb"))
    assert len(os.listdir(os.path.join("split", "log", "wandb"))) >= 2  # two offline sessions of the one run
    reference = tracked["tb"]
    series = {"tensorboard": _f32(read_tensorboard(os.path.join("split", "log", "serial"))),
              "wandb": _f32(read_wandb(os.path.join("split", "log", "wandb"), run_id)),
              "mlflow": _f32(read_mlflow(uri, runs[0].info.run_id, sorted(reference)))}
    for name, got in series.items():
        assert set(got) == set(reference), name
        for tag, points in reference.items():
            assert [s for s, _ in got[tag]] == [s for s, _ in points], (name, tag)  # no step twice, none missing
            if not tag.endswith(TIMED):
                assert got[tag] == points, (name, tag)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.parametrize("uri", ["http://127.0.0.1:{port}", "nosuchscheme://tracking"])
def test_a_broken_logger_uri_is_one_warning_and_the_run_trains_on(in_tmp_dir, uri):
    uri = uri.format(port=_free_port())
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        serial_pipeline(_cfg("broken", uri, types=("tensorboard", "mlflow"), request_retries=0), seed=0,
                        max_train_iter=120)
    ours = [w for w in caught if issubclass(w.category, RuntimeWarning) and "logger 'mlflow'" in str(w.message)]
    assert len(ours) == 1, [str(w.message) for w in caught]
    with open(os.path.join("broken", "result")) as f:
        assert json.load(f)["train_iter"] >= 120
    assert "learner_iter/total_loss" in read_tensorboard(os.path.join("broken", "log", "serial"))


def test_a_parallel_roles_writer_keeps_its_run_ids_and_a_bad_file_is_one_warning(in_tmp_dir):
    """``role_writer``: the trackers' run ids go to ``<log dir>/tracking.json`` when they start and are reopened by
    the role's next life; a file that does not hold them costs one warning and new tracked runs, never the role."""
    from ding.utils.tracking import role_writer

    uri = f"sqlite:///{os.path.abspath('mlflow.db')}"
    main, _ = _cfg("roles", uri, types=("tensorboard", "mlflow"))
    log_dir = os.path.join("roles", "log", "learner0")
    first = role_writer(main, "learner0", log_dir)
    first.start(main)
    first.add_scalar("learner_iter/total_loss", 1.0, 1)
    first.close()
    with open(os.path.join(log_dir, "tracking.json")) as f:
        saved = json.load(f)
    again = role_writer(main, "learner0", log_dir)
    again.start(main)
    assert again.state_dict() == saved
    again.close()
    client, runs = _mlflow_runs(uri, "roles")
    assert [(r.data.tags["ding.role"], r.data.tags["ding.run"], r.info.run_name) for r in runs] == \
        [("learner0", "roles", "roles/learner0")]
    with open(os.path.join(log_dir, "tracking.json"), "w") as f:
        f.write("[not the ids")
    with pytest.warns(RuntimeWarning, match=r"tracking\.json does not hold the trackers' run ids.*learner0 starts new"):
        third = role_writer(main, "learner0", log_dir)
    third.start(main)
    third.close()
    assert len(_mlflow_runs(uri, "roles")[1]) == 2
