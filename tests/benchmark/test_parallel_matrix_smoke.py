"""The parallel benchmark's config set, env kinds and A/B toggles (issue #37): configs compile, toggles are keys
parallel mode accepts, the slow env does its kind of work, and the tables add up (no figures asserted)."""
from __future__ import annotations

import os
import time

import pytest

from ding.config import compile_config, compile_config_parallel, read_config_with_system

from ._bench_loader import load_bench_module
from .slow_cartpole import SlowCartPoleEnv

pm = load_bench_module("parallel_matrix")


def _compiled(tmp_path, text: str, mode: str):
    path = tmp_path / f"cfg_{mode}.py"
    path.write_text(text)
    main, create, system = read_config_with_system(str(path))
    if mode == "serial":
        return compile_config(main, create_cfg=create, seed=0, save_cfg=False)
    return compile_config_parallel(main, create, system, seed=0, save_cfg=False)


@pytest.mark.parametrize("name", list(pm.CONFIGS))
def test_each_config_compiles_in_both_modes_with_the_same_hyperparameters(tmp_path, monkeypatch, name):
    monkeypatch.chdir(tmp_path)
    config = pm.CONFIGS[name]
    serial = _compiled(tmp_path, pm.config_text("serial", "native", config, 150.0), "serial")
    parallel = _compiled(tmp_path, pm.config_text("parallel", "native", config, 150.0), "parallel").main
    for cfg in (serial, parallel):
        assert cfg.env.type == "cartpole_slow_bench" and cfg.env.slow_kind == "native" and cfg.env.stop_value == 150.0
        for path, value in config.main.items():
            node = cfg
            for key in path.split("."):
                node = node[key]
            assert node == value, (name, path)
    assert serial.policy.learn.batch_size == parallel.policy.learn.batch_size
    assert serial.policy.eval.evaluator.eval_freq == parallel.policy.eval.evaluator.eval_freq


@pytest.mark.parametrize("mechanism", list(pm.MECHANISMS))
def test_each_mechanisms_on_and_off_are_keys_parallel_mode_accepts(tmp_path, monkeypatch, mechanism):
    """A mechanism deleted with its key (or its name in ding/parallel/mechanisms.py) makes this fail: drop it from
    MECHANISMS then."""
    from ding.parallel import mechanisms

    monkeypatch.chdir(tmp_path)
    mech = pm.MECHANISMS[mechanism]
    seen = []
    for keys in (mech.on, mech.off):
        env = pm.run_env(keys)
        assert set(env) <= {mechanisms.ENV_VAR}, (mechanism, env)
        if env:
            monkeypatch.setenv(mechanisms.ENV_VAR, env[mechanisms.ENV_VAR])
            assert mechanisms.turned_off() == {env[mechanisms.ENV_VAR]}  # a name the module knows
            monkeypatch.delenv(mechanisms.ENV_VAR)
        cfg = _compiled(tmp_path, pm.config_text("parallel", "gil", pm.CONFIGS["big-batch"], 150.0, keys), "parallel")
        values = [tuple(sorted(env.items()))]
        for path, value in keys.items():
            where, _, rest = path.partition(".")
            if where == "env":
                continue
            node = cfg.main if where == "main" else cfg.system
            for key in rest.split("."):
                node = node[key]
            values.append(node)
            assert node == (128 if value == "<batch_size>" else value), (mechanism, path)
        seen.append(values)
    assert seen[0] != seen[1]  # on and off differ


def test_an_env_toggled_mechanism_sets_an_environment_variable_not_a_config_key(monkeypatch):
    monkeypatch.setenv("DING_PARALLEL_OFF", "role_fork")
    assert pm.run_env(pm.MECHANISMS["sample_cache"].off) == {"DING_PARALLEL_OFF": "sample_cache"}
    assert pm.run_env(pm.MECHANISMS["sample_cache"].on) == {}
    assert "DING_PARALLEL_OFF" not in pm.config_text("parallel", "gil", pm.CONFIGS["shipped"], 150.0,
                                                     pm.MECHANISMS["sample_cache"].off)


@pytest.mark.parametrize("kind", ["gil", "native", "wait"])
def test_the_slow_env_spends_its_time_in_its_kind_of_work(kind):
    env = SlowCartPoleEnv(cfg=dict(slow_kind=kind, slow_ms=2.0))
    env.seed(0)
    env.reset()
    wall, cpu = time.perf_counter(), time.thread_time()
    for i in range(20):
        if env.step(i % 2).done:
            env.reset()
    wall, cpu = time.perf_counter() - wall, time.thread_time() - cpu
    assert wall >= 20 * 0.002  # every step costs at least its 2 ms, whatever the load
    if kind == "wait":
        assert cpu < wall / 2
    else:
        assert cpu >= 20 * 0.002
    with pytest.raises(Exception, match="slow_kind"):
        SlowCartPoleEnv(cfg=dict(slow_kind="gpu"))


def _fake_runner(times: dict):
    calls = []

    def runner(mode, kind, config, seed, budget, keys=None):
        calls.append((mode, config.name, seed, None if keys is None else tuple(sorted(keys.items()))))
        t = times(mode, config.name, seed, keys)
        return {"mode": mode, "kind": kind, "config": config.name, "seed": seed, "wall_s": t + 1.0, "reached": True,
                "time_to_stop_s": t, "env_step_to_stop": 1000, "env_step": 1000, "train_iter": 100,
                "load_before": 1.0, "load_after": 2.0}
    return runner, calls


def test_suite_pairs_serial_and_parallel_per_seed_and_reports_medians_and_per_seed_ratios():
    runner, calls = _fake_runner(lambda mode, name, seed, keys: 10.0 if mode == "serial" else 4.0 + seed)
    recs = pm.suite(["shipped", "big-batch"], ["gil"], [0, 1, 2], pm.Budget(), runner, echo=lambda line: None)
    assert [c[0] for c in calls[:4]] == ["serial", "parallel", "serial", "parallel"]  # seed 0: serial first
    assert [c[0] for c in calls[4:6]] == ["parallel", "serial"]  # seed 1: the other order
    rec = recs[0]
    assert rec["time_to_stop_s_seed_ratios"] == [0.4, 0.5, 0.6] and rec["time_to_stop_s_ratio"] == 0.5
    table = pm.suite_table(recs)
    assert "| gil | shipped |" in table and "median over configs" in table


def test_ab_interleaves_on_and_off_and_keeps_only_a_gain_of_ten_percent():
    def times(mode, name, seed, keys):
        on = keys == pm.MECHANISMS["sample_cache"].on
        return (8.0 if name == "shipped" else 9.5) if on else 10.0

    runner, calls = _fake_runner(times)
    recs = pm.ab("sample_cache", [("shipped", "gil"), ("eval-often", "native")], [0, 1], pm.Budget(), runner,
                 echo=lambda line: None)
    assert all(c[0] == "parallel" for c in calls) and len(calls) == 8
    v = pm.verdict(recs)
    assert v["per_case"] == {"shipped/gil": 0.8, "eval-often/native": 0.95}
    assert v["median_ratio"] == pytest.approx(0.875) and v["keep"]
    v_lost = pm.verdict([dict(r, time_to_stop_s_ratio=0.95) for r in recs])
    assert not v_lost["keep"]
    assert "| sample_cache | 0.80× | 0.95× | **0.88×**" in pm.ab_table([v], recs)


@pytest.mark.benchmark
@pytest.mark.timeout(300)
def test_a_parallel_run_on_the_slow_env_ends_at_its_env_step_budget(monkeypatch):
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(p for p in (pm.ROOT, os.environ.get("PYTHONPATH")) if p))
    r = pm.one_run("parallel", "wait", pm.CONFIGS["shipped"], 0, pm.Budget(stop_value=1e9, env_step=200))
    assert not r["reached"] and r["env_step"] >= 200 and r["time_to_stop_s"] == r["wall_s"]


def test_the_command_runs_the_suite_and_each_named_mechanism_and_prints_their_tables(monkeypatch, capsys):
    bench = load_bench_module("bench_parallel")
    ons = [m.on for m in bench.pm.MECHANISMS.values()]
    runner, calls = _fake_runner(lambda mode, name, seed, keys: 9.0 if mode == "parallel" and keys in ons else 10.0)
    monkeypatch.setattr(bench.pm, "one_run", runner)
    monkeypatch.setattr(bench, "throughput", lambda setups, seeds, iters: [])
    out = bench.main(["--suite", "--kinds", "wait", "--configs", "shipped", "--seeds", "2",
                      "--ab", "sample_cache,role_start", "--cases", "shipped:gil"])
    assert [r["bench"] for r in out] == ["parallel_suite", "parallel_ab", "parallel_ab"]
    assert len(calls) == 2 * 2 + 2 * 2 * 2  # suite: 2 seeds x 2 modes; A/B: 2 mechanisms x 2 seeds x on/off
    text = capsys.readouterr().out
    assert "| wait | shipped |" in text and "| sample_cache | 0.90× | **0.90×** |" in text and "| keep |" in text
    with pytest.raises(SystemExit):
        bench.main(["--ab", "no_such_mechanism"])
