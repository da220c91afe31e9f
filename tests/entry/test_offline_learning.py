"""Offline learning on data sets made here by the project's own trained policies (tests/benchmark/offline_datasets.py).

Default suite (small): a CartPole DQN expert writes 2,000 transitions and DI-engine's own ``cartpole_bc_config.py``
learns from them through ``serial_pipeline_offline``. Slow (``make test-all``): the acceptance checks on 3 seeds,
each within the stated iteration budget, as normalised scores (0 = random policy, 100 = the data's expert).
"""
from __future__ import annotations

import os
import statistics
import sys

import pytest

from ding.config import read_config
from ding.engine.training_view import read_eval_csv
from ding.entry import collect_demo_data, serial_pipeline, serial_pipeline_offline
from tests.di_engine_files import copy_di_engine_file

pytest.importorskip("h5py", reason="the 'offline' extra (h5py) is not installed")
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(ROOT, "tests", "benchmark"))


@pytest.mark.convergence
def test_bc_learns_cartpole_from_a_dqn_expert(in_tmp_dir):
    expert = read_config(os.path.join(ROOT, "config", "serial", "cartpole_dqn.py"))
    expert[0].exp_name = "expert"
    serial_pipeline(expert, seed=0)
    data = collect_demo_data(expert, 0, 2000, "expert.hdf5", state_dict_path="expert/ckpt/ckpt_best.pth.tar")
    main, create = read_config(copy_di_engine_file("dizoo/classic_control/cartpole/config/cartpole_bc_config.py",
                                                   str(in_tmp_dir)))
    main.policy.collect = {"data_path": data}
    main.exp_name = "bc"
    _, reached = serial_pipeline_offline((main, create), seed=0, max_train_iter=800)
    best = max(r["eval_return_mean"] for r in read_eval_csv(os.path.join("bc", "log", "eval.csv")))
    assert best >= 120, best  # the expert: 195+, a random policy: ~20


@pytest.fixture(scope="module")
def datasets(tmp_path_factory):
    from offline_datasets import make

    return make(str(tmp_path_factory.mktemp("offline_data")))


def _scores(datasets, work, config, kind, iters, seeds=(0, 1, 2)):
    from bench_offline import run_one

    return [run_one(config, datasets[f"{config.split('_')[0]}_{kind}"], s, iters, str(work)) for s in seeds]


@pytest.mark.slow
@pytest.mark.parametrize("config,iters", [("pendulum_cql", 10000), ("pendulum_td3_bc", 10000)])
def test_pendulum_expert_cql_and_td3bc_reach_90_normalised(tmp_path, datasets, config, iters):
    results = _scores(datasets, tmp_path, config, "expert", iters)
    assert all(r["best_score"] >= 90 for r in results), results


DISCRETE_CQL_SHORT = pytest.mark.xfail(strict=True, reason="discrete CQL reaches 195 on 1 of 3 seeds within 5,000 "
                                       "iterations (docs/benchmarks.md, offline RL); an open acceptance item")
CQL_MEDIUM_SHORT = "CQL with DI-engine's Pendulum settings scores below BC on the medium data (docs/benchmarks.md)"


@pytest.mark.slow
@pytest.mark.parametrize("config,iters", [pytest.param("cartpole_cql", 5000, marks=DISCRETE_CQL_SHORT),
                                          ("cartpole_bc", 5000)])
def test_cartpole_expert_discrete_cql_and_bc_reach_195(tmp_path, datasets, config, iters):
    results = _scores(datasets, tmp_path, config, "expert", iters)
    assert all(r["best_return"] >= 195 for r in results), results


@pytest.mark.slow
@pytest.mark.parametrize("config", ["pendulum_td3_bc", "pendulum_iql",
                                    pytest.param("pendulum_cql", marks=pytest.mark.xfail(strict=True,
                                                                                         reason=CQL_MEDIUM_SHORT))])
def test_pendulum_medium_offline_rl_beats_bc(tmp_path, datasets, config):
    bc = statistics.median(r["final_score"] for r in _scores(datasets, tmp_path, "pendulum_bc", "medium", 3000))
    rl = statistics.median(r["final_score"] for r in _scores(datasets, tmp_path, config, "medium", 3000))
    assert rl > bc, (config, rl, bc)
