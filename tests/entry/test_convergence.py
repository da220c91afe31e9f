"""Every shipped config (config/serial/*.py) reaches its stop value on several seeds, through the ``ding`` command.

Slow (about a minute on 2 cores): ``make test-all`` runs it. The default suite keeps one seed of each algorithm
(``test_cartpole_dqn_reaches_stop_value``, ``test_prioritized_dqn_reaches_stop_value_and_feeds_priorities_back``).
"""
from __future__ import annotations

import glob
import os
import re

import pytest

from ding.config import read_config
from ding.entry.cli import main

from .conftest import read_result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CONFIGS = sorted(glob.glob(os.path.join(ROOT, "config", "serial", "*.py")))
SEEDS = [0, 1, 2, 3, 4]
BUDGET = 10_000  # env steps; the configs' docstrings promise ~1-2k, the slowest of these seeds needs ~4k


def budget(config: str) -> int:
    """The env-step budget config/README.md promises for ``config`` (its table row), else ``BUDGET``."""
    row = f"| `serial/{os.path.basename(config)}` |"
    with open(os.path.join(ROOT, "config", "README.md")) as f:
        for line in f:
            if line.startswith(row):
                return int(line.split("|")[5].strip().replace(",", ""))
    return BUDGET


def test_the_shipped_configs_are_found():
    assert {"cartpole_dqn.py", "cartpole_dqn_priority.py"} <= {os.path.basename(c) for c in CONFIGS}
    assert budget(os.path.join(ROOT, "config", "serial", "pendulum_sac.py")) == 4000


@pytest.mark.slow
@pytest.mark.convergence
@pytest.mark.parametrize("config", CONFIGS, ids=os.path.basename)
def test_every_shipped_config_reaches_its_stop_value_on_every_seed(in_tmp_dir, config):
    seeds = [arg for s in SEEDS for arg in ("-s", str(s))]
    limit = budget(config)
    assert main(["-m", "serial", "-c", config, *seeds, "--env-step", str(limit)]) == 0
    exp_name = read_config(config)[0].exp_name
    for seed in SEEDS:
        result = read_result(re.sub(r"_seed\d+$", f"_seed{seed}", exp_name))
        assert result["stop_flag"] is True, (seed, result)
        assert result["eval_return"] >= result["stop_value"] and result["env_step"] <= limit
