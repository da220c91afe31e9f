"""``serial_pipeline_offline`` / ``ding -m serial_offline`` on DI-engine 0.5.3's own offline config files (fetched from
its wheel; only ``data_path`` points at a data set made here by ``collect_demo_data``), exact resume, and the
errors of a data set that does not fit."""
from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
import torch

from ding.config import read_config
from ding.engine.training_view import read_eval_csv
from ding.entry import collect_demo_data, serial_pipeline_offline
from ding.utils import DatasetError
from ding.utils.data import StreamedHDF5Dataset, create_dataset, load_hdf5
from tests.di_engine_files import copy_di_engine_file

from .conftest import read_result

pytest.importorskip("h5py", reason="the 'offline' extra (h5py) is not installed")

CONFIGS = {
    "pendulum_cql": "dizoo/classic_control/pendulum/config/pendulum_cql_config.py",
    "pendulum_td3_bc": "dizoo/classic_control/pendulum/config/pendulum_td3_bc_config.py",
    "cartpole_cql": "dizoo/classic_control/cartpole/config/cartpole_cql_config.py",
    "cartpole_bc": "dizoo/classic_control/cartpole/config/cartpole_bc_config.py",
}


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """DI-engine's four config files and a small random-policy data set per env (made by collect_demo_data)."""
    d = tmp_path_factory.mktemp("offline")
    out = {name: copy_di_engine_file(path, str(d)) for name, path in CONFIGS.items()}
    cwd = os.getcwd()
    os.chdir(d)
    try:
        for env, cfg in (("pendulum", "pendulum_cql"), ("cartpole", "cartpole_cql")):
            out[env] = collect_demo_data(read_config(out[cfg]), 0, 400, str(d / f"{env}_random.hdf5"),
                                         random_policy=True)
    finally:
        os.chdir(cwd)
    return out


def _cfg(files, name, exp_name, data=None):
    main, create = read_config(files[name])
    main.policy.setdefault("collect", {})
    main.policy.collect.data_path = data or files[name.split("_")[0]]
    main.exp_name = exp_name
    return main, create


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_di_engine_offline_configs_run_unchanged(in_tmp_dir, files, name):
    policy, stop = serial_pipeline_offline(_cfg(files, name, "run"), seed=0, max_train_iter=30)
    result = read_result("run")
    assert result["train_iter"] == 30 and result["env_step"] == 0 and stop is False
    assert result["eval_return"] is not None  # evaluated in the env at iteration 0
    assert os.path.isfile(os.path.join("run", "ckpt", "ckpt_best.pth.tar"))
    assert type(policy).__name__ in {"CQLPolicy", "TD3BCPolicy", "DiscreteCQLPolicy", "BehaviourCloningPolicy"}


def test_td3bc_offline_stats_normalise_the_learner_and_the_evaluator_alike(in_tmp_dir, files, monkeypatch):
    """DI-engine's TD3BC file asks for the data set's observation statistics (``env.norm_obs.offline_stats``): the
    actor learns on ``(obs - mean) / std`` and the evaluator's envs feed it the same, not raw observations.
    Pendulum's raw observation is ``(cos, sin, theta_dot)``, so ``cos^2 + sin^2 = 1`` holds exactly where a
    normalised one is mapped back with the data set's mean and std, and not on the normalised one itself."""
    from ding.policy.td3_bc import TD3BCPolicy

    seen: dict[str, list] = {"learn": [], "eval": []}
    actor_loss, forward_eval = TD3BCPolicy._actor_loss, TD3BCPolicy._forward_eval

    def record_learn(self, b):
        seen["learn"].append(b.obs.detach().cpu().numpy())
        return actor_loss(self, b)

    def record_eval(self, data):
        seen["eval"].extend(np.asarray(o, np.float32) for o in data.values())
        return forward_eval(self, data)

    monkeypatch.setattr(TD3BCPolicy, "_actor_loss", record_learn)
    monkeypatch.setattr(TD3BCPolicy, "_forward_eval", record_eval)
    serial_pipeline_offline(_cfg(files, "pendulum_td3_bc", "run"), seed=0, max_train_iter=4)
    ds = load_hdf5(files["pendulum"])
    for where in ("learn", "eval"):
        obs = np.concatenate([np.reshape(o, (-1, 3)) for o in seen[where]])
        assert len(obs) > 0, where
        raw = obs * ds.std + ds.mean
        assert np.allclose(raw[:, 0] ** 2 + raw[:, 1] ** 2, 1.0, atol=1e-4), where
        assert not np.allclose(obs[:, 0] ** 2 + obs[:, 1] ** 2, 1.0, atol=1e-2), where


def test_collect_demo_data_records_the_behaviour_return_and_refuses_to_overwrite(files):
    ds = load_hdf5(files["cartpole"])
    assert len(ds) == 400 and ds.meta["policy"] == "random" and ds.meta["behaviour_episodes"] > 5
    assert ds.meta["behaviour_return"] == pytest.approx(ds.episode_returns().mean())
    with pytest.raises(DatasetError, match="already there"):
        collect_demo_data(read_config(files["cartpole_cql"]), 0, 10, files["cartpole"], random_policy=True)


def _params(policy):
    return policy.learn_mode.state_dict()["model"]


@pytest.mark.parametrize("name,budget_mb", [("pendulum_cql", None), ("cartpole_cql", None),
                                             ("cartpole_cql", 0.012)])  # 0.012 MB: streamed, 64-row windows
def test_stopped_and_resumed_run_matches_an_unstopped_one(in_tmp_dir, files, name, budget_mb):
    def cfg(exp):
        main, create = _cfg(files, name, exp)
        main.policy.collect.memory_budget_mb = budget_mb
        main.policy.eval.evaluator.eval_freq = 10
        main.env.stop_value = 1e9  # never stop early
        return main, create

    streamed = isinstance(create_dataset(cfg("probe")[0]), StreamedHDF5Dataset)
    assert streamed == (budget_mb is not None)
    full, _ = serial_pipeline_offline(cfg("full"), seed=0, max_train_iter=40)
    serial_pipeline_offline(cfg("part"), seed=0, max_train_iter=15)  # stops mid-epoch, between two evaluations
    resumed, _ = serial_pipeline_offline(cfg("part"), seed=0, max_train_iter=40, resume=True)
    a, b = _params(full), _params(resumed)
    assert all(torch.equal(a[k], b[k]) for k in a)
    evals = [(r["train_iter"], r["eval_return_mean"]) for r in read_eval_csv(os.path.join("full", "log", "eval.csv"))]
    assert evals == [(r["train_iter"], r["eval_return_mean"])
                     for r in read_eval_csv(os.path.join("part", "log", "eval.csv"))]
    assert len(evals) == 4


def test_ding_serial_offline_resumes_exactly_after_ctrl_c(in_tmp_dir, files):
    path = os.path.join(str(in_tmp_dir), "cartpole_cql_config.py")
    text = open(files["cartpole_cql"]).read()
    text = re.sub(r"data_path='[^']*'", f"data_path={files['cartpole']!r}", text)
    with open(path, "w") as f:
        f.write(text)
    ding = [sys.executable, "-m", "ding", "-m", "serial_offline", "-c", path, "-s", "0", "--train-iter", "300"]
    main, create = read_config(path)
    main.exp_name = "full"
    serial_pipeline_offline((main, create), seed=0, max_train_iter=300)  # the unstopped run, in this process
    proc = subprocess.Popen([*ding, "--exp-name", "part"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = ""
    deadline = time.time() + 240
    assert proc.stdout is not None
    while time.time() < deadline:
        line = proc.stdout.readline()
        out += line
        if "[learner] iter 100" in line or not line:
            break
    proc.send_signal(signal.SIGINT)
    out += proc.communicate(timeout=120)[0]
    assert proc.returncode == 130, out
    assert "to resume: ding -m serial_offline" in out
    done = subprocess.run([*ding, "--exp-name", "part", "--resume"], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    assert read_result("part")["train_iter"] == read_result("full")["train_iter"] == 300
    from ding.worker import load_checkpoint_file

    a = load_checkpoint_file(os.path.join("full", "ckpt", "iteration_300.pth.tar"))["model"]
    b = load_checkpoint_file(os.path.join("part", "ckpt", "iteration_300.pth.tar"))["model"]
    assert all(torch.equal(a[k], b[k]) for k in a)


def test_a_data_set_that_does_not_fit_the_policy_is_one_error(in_tmp_dir, files):
    with pytest.raises(DatasetError, match=r"cartpole_random\.hdf5: field 'obs' has shape \(4,\) per row, but policy "
                                           r"'cql' expects \(3,\)"):
        serial_pipeline_offline(_cfg(files, "pendulum_cql", "wrong", data=files["cartpole"]), seed=0, max_train_iter=5)
    assert not os.path.exists("wrong")  # nothing of the refused run is left behind
    with pytest.raises(DatasetError, match=r"missing\.hdf5: no such data set"):
        serial_pipeline_offline(_cfg(files, "cartpole_bc", "gone", data="missing.hdf5"), seed=0, max_train_iter=5)
