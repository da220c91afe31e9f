"""ding/parallel/mechanisms.py: the speed mechanisms an A/B benchmark turns off through DING_PARALLEL_OFF (no config
key), and what each one's code asks it."""
from __future__ import annotations

import pytest

from ding.parallel import mechanisms
from ding.utils import ConfigError


def test_every_mechanism_is_on_unless_the_variable_names_it(monkeypatch):
    monkeypatch.delenv(mechanisms.ENV_VAR, raising=False)
    assert all(mechanisms.is_on(name) for name in mechanisms.MECHANISMS)
    monkeypatch.setenv(mechanisms.ENV_VAR, " role_fork, sample_cache ,")
    assert mechanisms.turned_off() == {"role_fork", "sample_cache"}
    assert not mechanisms.is_on("sample_cache") and not mechanisms.is_on("role_fork")


def test_an_unknown_name_is_one_error_listing_the_known_ones(monkeypatch):
    monkeypatch.setenv(mechanisms.ENV_VAR, "sample_cache,governor")
    with pytest.raises(ConfigError) as e:
        mechanisms.is_on("sample_cache")
    text = str(e.value)
    assert text.startswith("DING_PARALLEL_OFF: unknown mechanism 'governor'") and "role_fork" in text, text
    with pytest.raises(KeyError, match="not a mechanism"):
        mechanisms.is_on("governor")  # a typo in ding's own code, not in the environment


def test_the_launcher_follows_the_variable(monkeypatch, in_tmp_dir):
    import copy

    from ding.config import compile_config_parallel
    from ding.parallel.launch.local import _start_method
    from dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config import (
        create_config,
        main_config,
        system_config,
    )

    cfg = compile_config_parallel(*(copy.deepcopy(c) for c in (main_config, create_config, system_config)),
                                  save_cfg=False)
    monkeypatch.delenv(mechanisms.ENV_VAR, raising=False)
    assert _start_method(cfg) == "fork"
    monkeypatch.setenv(mechanisms.ENV_VAR, "role_fork")
    assert _start_method(cfg) == "exec"


def test_a_run_with_an_unknown_name_fails_before_it_writes_anything(monkeypatch, in_tmp_dir):
    import copy
    import os

    from ding.parallel.launch.local import launch_parallel
    from dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config import (
        create_config,
        main_config,
        system_config,
    )

    monkeypatch.setenv(mechanisms.ENV_VAR, "sample_cach")
    with pytest.raises(ConfigError, match="DING_PARALLEL_OFF: unknown mechanism 'sample_cach'"):
        launch_parallel(*(copy.deepcopy(c) for c in (main_config, create_config, system_config)))
    assert os.listdir(".") == []
