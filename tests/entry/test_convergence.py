"""Every shipped config (config/serial/*.py) reaches its stop value on several seeds, through the ``ding`` command
(``-m serial`` or ``-m serial_onpolicy``, as its policy needs), within the env-step budget config/README.md promises.

Slow (minutes on 2 cores): ``make test-all`` runs it. The default suite keeps one seed of each algorithm
(``test_cartpole_dqn_reaches_stop_value``, ``test_prioritized_dqn_reaches_stop_value_and_feeds_priorities_back``,
``test_cartpole_ppo_reaches_195_within_its_budget``).
"""
from __future__ import annotations

import glob
import os
import re

import pytest

from ding.config import read_config
from ding.entry.cli import main
from tests.benchmark._bench_loader import load_bench_module

from .conftest import read_result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "config", "serial", "*.py")))
SEEDS = [0, 1, 2, 3, 4]
BUDGET = 10_000  # env steps, for a config config/README.md does not list


def _bench_algos():
    return load_bench_module("bench_algos")


def test_the_shipped_configs_are_found():
    assert {"cartpole_dqn.py", "cartpole_dqn_priority.py"} <= {os.path.basename(c) for c in CONFIGS}


def test_readme_budgets_and_pipeline_modes():
    bench = _bench_algos()
    budgets = bench.read_budgets()
    assert budgets["cartpole_ppo"]["budget"] >= 1000 and budgets["cartpole_ppo"]["stop_value"] == 195
    listed = {os.path.splitext(os.path.basename(c))[0] for c in CONFIGS}
    assert set(budgets) <= listed  # every row names a shipped config
    assert bench.pipeline_mode(os.path.join(ROOT, "config", "serial", "cartpole_ppo.py")) == "serial_onpolicy"
    assert bench.pipeline_mode(os.path.join(ROOT, "config", "serial", "cartpole_dqn.py")) == "serial"


def test_config_readme_gives_each_q_family_config_its_budget():
    budgets = _bench_algos().read_budgets()
    assert budgets["cartpole_r2d2"]["budget"] == 40_000 and budgets["lunarlander_dqn"]["budget"] == 150_000


def test_config_readme_gives_each_continuous_config_its_budget():
    budgets = _bench_algos().read_budgets()
    assert budgets["pendulum_sac"]["budget"] == 4000 and budgets["pendulum_sac"]["stop_value"] == -250


@pytest.mark.slow
@pytest.mark.convergence
@pytest.mark.timeout(3600)  # five seeds of LunarLander take 10-20 minutes on 2 cores
@pytest.mark.parametrize("config", CONFIGS, ids=os.path.basename)
def test_every_shipped_config_reaches_its_stop_value_on_every_seed(in_tmp_dir, config):
    bench = _bench_algos()
    name = os.path.splitext(os.path.basename(config))[0]
    budget = bench.read_budgets().get(name, {}).get("budget", BUDGET)
    seeds = [arg for s in SEEDS for arg in ("-s", str(s))]
    assert main(["-m", bench.pipeline_mode(config), "-c", config, *seeds, "--env-step", str(budget)]) == 0
    exp_name = read_config(config)[0].exp_name
    for seed in SEEDS:
        result = read_result(re.sub(r"_seed\d+$", f"_seed{seed}", exp_name))
        assert result["stop_flag"] is True, (seed, result)
        assert result["eval_return"] >= result["stop_value"] and result["env_step"] <= budget
