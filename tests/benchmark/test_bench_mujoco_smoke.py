"""bench_mujoco: a smoke run of the script (seconds), the summary arithmetic, and (slow) the learning run itself."""
from __future__ import annotations

import importlib.util
import json

import pytest

from ._bench_loader import load_bench_module

MUJOCO = importlib.util.find_spec("mujoco") is not None
needs_mujoco = pytest.mark.skipif(not MUJOCO, reason="the mujoco extra is not installed (pip install -e '.[mujoco]')")


@needs_mujoco
@pytest.mark.benchmark
def test_bench_mujoco_smoke(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    summary = load_bench_module("bench_mujoco").main(["--smoke", "--runs-file", "runs.jsonl"])
    assert summary["bench"] == "mujoco_summary" and summary["env_id"] == "Hopper-v5" and summary["target"] == 1000
    ding = summary["sac"]["ding"]
    assert ding["seeds"] == [0] and ding["reached"] in ("0/1", "1/1") and ding["median_wall_s"] > 0
    (run,) = [json.loads(ln) for ln in open("runs.jsonl")]
    assert run["framework"] == "ding" and run["env_step"] >= 500
    assert len(run["curve"]) >= 2 and all(step <= run["env_step"] for step, _, _, _ in run["curve"])
    cpus = [cpu for _, _, _, cpu in run["curve"]]  # the process's CPU seconds at each evaluation, rising
    assert cpus == sorted(cpus) and 0 < cpus[-1] <= run["cpu_s"]
    assert "sac  ding" in capsys.readouterr().out


def test_summary_compares_wall_time_to_the_target_with_sb3():
    bench = load_bench_module("bench_mujoco")
    runs = [dict(algo="sac", framework=fw, seed=s, wall_s=w, env_step=100_000, curve=c) for fw, s, w, c in [
        ("ding", 0, 900.0, [[10_000, 60.0, 200.0], [15_000, 120.0, 1100.0], [20_000, 180.0, 900.0]]),
        ("ding", 1, 1000.0, [[10_000, 70.0, 300.0], [15_000, 140.0, 700.0], [20_000, 200.0, 1500.0]]),
        ("ding", 2, 950.0, [[10_000, 65.0, 250.0], [20_000, 190.0, 400.0]]),  # never reaches 1,000
        ("sb3", 0, 1800.0, [[5_000, 100.0, 50.0], [10_000, 250.0, 1000.0]]),
        ("sb3", 1, 2000.0, [[5_000, 110.0, 50.0], [10_000, 350.0, 1200.0]]),
    ]]
    summary = bench.summarize(runs, 1000.0)
    ding, sb3 = summary["sac"]["ding"], summary["sac"]["sb3"]
    assert ding["reached"] == "2/3" and ding["median_wall_to_target_s"] == 160.0  # of 120 and 200
    assert ding["median_steps_to_target"] == 17_500 and ding["median_final_return"] == 900.0
    assert sb3["reached"] == "2/2" and sb3["median_wall_to_target_s"] == 300.0
    assert summary["sac"]["ding_wall_to_target_vs_sb3"] == round(160 / 300, 2)
    assert summary["sac"]["ding_total_wall_vs_sb3"] == round(950 / 1900, 2)
    assert ding["median_cpu_to_target_s"] is None and "ding_cpu_to_target_vs_sb3" not in summary["sac"]  # (no CPU)


def test_summary_compares_cpu_seconds_to_the_target_where_the_curves_carry_them():
    bench = load_bench_module("bench_mujoco")
    runs = [dict(algo="sac", framework=fw, seed=0, wall_s=100.0, env_step=100_000, curve=c) for fw, c in [
        ("ding", [[10_000, 60.0, 200.0, 50.0], [15_000, 120.0, 1100.0, 90.0]]),
        ("sb3", [[10_000, 70.0, 300.0, 60.0], [15_000, 150.0, 1000.0, 120.0]]),
    ]]
    summary = bench.summarize(runs, 1000.0)
    assert summary["sac"]["ding"]["median_cpu_to_target_s"] == 90.0
    assert summary["sac"]["sb3"]["median_cpu_to_target_s"] == 120.0
    assert summary["sac"]["ding_cpu_to_target_vs_sb3"] == 0.75 and summary["sac"]["ding_wall_to_target_vs_sb3"] == 0.8


def test_di_engine_hyperparameters_are_di_engine_files_sac_values_and_summarised_apart():
    bench = load_bench_module("bench_mujoco")
    main, _ = bench.ding_config("sac", 0, bench.Protocol(1_000, 500, 1, 200, hparams="di-engine"))
    learn = main["policy"]["learn"]  # dizoo/mujoco/config/hopper_sac_config.py of DI-engine 0.5.3
    assert (learn["learning_rate_q"], learn["learning_rate_policy"]) == (1e-3, 1e-3)
    assert learn["auto_alpha"] is False and learn["alpha"] == 0.2
    zoo, _ = bench.ding_config("sac", 0, bench.Protocol(1_000, 500, 1, 200))
    assert zoo["policy"]["learn"]["learning_rate_q"] == 3e-4 and zoo["policy"]["learn"]["auto_alpha"] is True
    assert "--hparams" in bench.Protocol(1, 1, 1, 1, hparams="di-engine").args()
    runs = [dict(algo="sac", framework="ding", seed=0, wall_s=1.0, env_step=1, curve=[[1, 1.0, 5.0]], hparams=h)
            for h in ("zoo", "di-engine")]
    summary = bench.summarize(runs, 1000.0)
    assert summary["sac"]["ding"]["seeds"] == [0] and summary["sac@di-engine"]["ding"]["seeds"] == [0]


@needs_mujoco
@pytest.mark.slow
@pytest.mark.timeout(4 * 3600)
def test_ding_sac_reaches_1000_on_hopper_within_100k_env_steps(tmp_path, monkeypatch):
    """The learning run (about 35 minutes on 2 cores): ding's SAC, seed 0, Hopper-v5, 100k env steps, with
    DI-engine's hopper_sac_config values and two gradient steps per env step (the setting that passed 1,000 on 3 of 3
    seeds, docs/benchmarks.md; with RL-Zoo's values 1 seed of 3 did)."""
    monkeypatch.chdir(tmp_path)
    summary = load_bench_module("bench_mujoco").main(["--frameworks", "ding", "--seeds", "0",
                                                      "--hparams", "di-engine-utd2"])
    assert summary["sac"]["ding"]["reached"] == "1/1", summary


@pytest.mark.parametrize("algo", ["sac", "td3", "ppo"])
def test_every_ding_config_of_the_benchmark_builds_its_policy(algo, tmp_path, monkeypatch):
    """Each algorithm's config (not only the smoke run's SAC) compiles and builds its policy: a config key the policy
    does not take, or a model argument it cannot build, fails here in seconds instead of in the hour-long run."""
    import torch
    from easydict import EasyDict

    from ding.config import compile_config
    from ding.policy import create_policy

    monkeypatch.chdir(tmp_path)
    bench = load_bench_module("bench_mujoco")
    main, create = (EasyDict(c) for c in bench.ding_config(algo, 0, bench.Protocol(1_000, 500, 1, 200)))
    create.env.import_names = []  # the env is not built here: no mujoco needed
    cfg = compile_config(main, create_cfg=create, save_cfg=False)
    policy = create_policy(cfg.policy, enable_field=["learn", "collect", "eval"])
    assert sum(p.numel() for p in policy.learn_mode.state_dict()["model"].values()) > 0
    if algo == "ppo":  # SB3's MlpPolicy shape: separate 64-64 tanh networks, no value clipping
        model = policy._model
        assert model.actor_encoder is not model.critic_encoder
        assert any(isinstance(m, torch.nn.Tanh) for m in model.modules())
        assert cfg.policy.learn.value_clip is False
