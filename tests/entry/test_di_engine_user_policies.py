"""DI-engine 0.5.3's own policy files, taken as a user's modules (see tests/di_engine_user_policies.py), train
through the ``ding`` command on DI-engine's own dizoo configs to the stop value, and resume exactly after Ctrl-C."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import torch

from ding.config import read_config
from ding.engine.training_view import read_eval_csv
from ding.entry.cli import main
from tests.di_engine_user_policies import write_user_config, write_user_package

from .conftest import read_result

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CARTPOLE = "dizoo/classic_control/cartpole/config/cartpole_{}_config.py"
PENDULUM = "dizoo/classic_control/pendulum/config/pendulum_{}_config.py"


def _forget_user_policies():
    """Each test imports its own copy of the user package: drop the modules and what they registered."""
    from ding.utils import POLICY_REGISTRY

    for name in [m for m in sys.modules if m == "user_policies" or m.startswith("user_policies.")]:
        del sys.modules[name]
    for key in [k for k, v in POLICY_REGISTRY.items() if getattr(v, "__module__", "").startswith("user_policies")]:
        del POLICY_REGISTRY[key]


@pytest.fixture
def user_dir(in_tmp_dir, monkeypatch):
    write_user_package(str(in_tmp_dir), ["dqn", "c51", "ppo", "a2c", "sac", "ddpg", "td3"])
    monkeypatch.syspath_prepend(str(in_tmp_dir))
    _forget_user_policies()
    yield in_tmp_dir
    _forget_user_policies()


@pytest.mark.parametrize("name,mode,budget", [
    ("dqn", "serial", 10_000), ("ppo", "serial_onpolicy", 20_000),
    ("a2c", "serial_onpolicy", 60_000), ("c51", "serial", 30_000),
])
def test_di_engine_cartpole_policy_file_reaches_195(user_dir, name, mode, budget):
    config = write_user_config(str(user_dir), CARTPOLE.format(name), name, f"user_{name}")
    assert main(["-m", mode, "-c", config, "-s", "0", "--env-step", str(budget)]) == 0
    result = read_result(f"user_{name}")
    assert result["stop_flag"] is True and result["eval_return"] >= 195 and result["env_step"] <= budget


def test_the_command_mode_class_the_user_registered_is_used(user_dir):
    from ding.config import compile_config
    from ding.policy import create_policy

    config = write_user_config(str(user_dir), CARTPOLE.format("dqn"), "dqn", "user_dqn")
    main_cfg, create_cfg = read_config(config)
    cfg = compile_config(main_cfg, create_cfg=create_cfg, seed=0, auto=True)
    policy = create_policy(cfg.policy, enable_field=["learn", "collect", "eval", "command"])
    assert type(policy).__name__ == "UserDQNCommandModePolicy"
    eps = policy.command_mode.get_setting_collect({"envstep": 0})["eps"]
    assert eps == pytest.approx(0.95)
    plain = create_policy(cfg.policy, enable_field=["collect"])
    assert type(plain).__name__ == "DQNPolicy"


@pytest.mark.parametrize("name", ["sac", "ddpg", "td3"])
def test_di_engine_pendulum_policy_file_runs_two_iterations(user_dir, name):
    config = write_user_config(str(user_dir), PENDULUM.format(name), name, f"user_{name}")
    assert main(["-m", "serial", "-c", config, "-s", "0", "--train-iter", "2"]) == 0
    result = read_result(f"user_{name}")
    assert result["train_iter"] == 2 and result["env_step"] >= read_config(config)[0].policy.random_collect_size


# the env-step budgets tests/entry/test_continuous_pipelines.py gives DI-engine's own config files
@pytest.mark.slow
@pytest.mark.convergence
@pytest.mark.timeout(1800)
@pytest.mark.parametrize("name,budget", [("sac", 50_000), ("ddpg", 200_000), ("td3", 250_000)])
def test_di_engine_pendulum_policy_file_reaches_minus_250(user_dir, name, budget):
    config = write_user_config(str(user_dir), PENDULUM.format(name), name, f"user_{name}")
    assert main(["-m", "serial", "-c", config, "-s", "0", "--env-step", str(budget)]) == 0
    result = read_result(f"user_{name}")
    print(f"user {name}: {result}")
    assert result["stop_flag"] is True and result["eval_return"] >= -250 and result["env_step"] <= budget


@pytest.mark.parametrize("name", ["sac", "ddpg", "td3"])
def test_di_engine_pendulum_policy_file_fits_its_critic(user_dir, name):
    """The CI stand-in for the convergence runs above: the user file's learn mode on ding's model, given one batch of
    real Pendulum transitions 60 times, reports finite values and brings its critic loss well down (a broken gradient
    path, optimizer or model output would not)."""
    import gymnasium as gym
    import numpy as np

    from ding.config import compile_config
    from ding.policy import create_policy

    config = write_user_config(str(user_dir), PENDULUM.format(name), name, f"user_{name}")
    main_cfg, create_cfg = read_config(config)
    cfg = compile_config(main_cfg, create_cfg=create_cfg, seed=0, auto=True)
    policy = create_policy(cfg.policy, enable_field=["learn"])
    env, rng = gym.make("Pendulum-v1"), np.random.default_rng(0)
    obs, _ = env.reset(seed=0)
    batch = []
    for _ in range(cfg.policy.learn.batch_size):
        action = rng.uniform(-1, 1, size=1).astype(np.float32)  # the config's act_scale: the env gets 2 * action
        next_obs, reward, *_ = env.step(2 * action)
        batch.append({"obs": torch.as_tensor(obs), "action": torch.as_tensor(action),
                      "reward": torch.tensor([reward], dtype=torch.float32), "next_obs": torch.as_tensor(next_obs),
                      "done": False})
        obs = next_obs
    env.close()
    outputs = [policy.learn_mode.forward(batch) for _ in range(60)]
    for out in outputs:
        values = {k: _scalar(v) for k, v in out.items() if k in policy.learn_mode.monitor_vars() and k != "priority"}
        assert values and all(np.isfinite(v) for v in values.values()), values
    first, last = _scalar(outputs[0]["critic_loss"]), _scalar(outputs[-1]["critic_loss"])
    assert last < first / 4, (first, last)


def _scalar(value) -> float:
    """A logged value as a float; DI-engine's SAC file logs some as tensors that still require grad."""
    return float(value.detach()) if isinstance(value, torch.Tensor) else float(value)


def _ding(args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([cwd, ROOT, os.environ.get("PYTHONPATH", "")]),
               PYTHONUNBUFFERED="1")
    return subprocess.Popen([sys.executable, "-m", "ding.entry.cli", *args], cwd=cwd, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


# DI-engine's Pendulum configs made small enough to stop and resume in seconds (appended to the copied file)
SMALL_PENDULUM = """
main_config.policy.random_collect_size = 64
main_config.policy.learn.batch_size = 16
main_config.policy.model.actor_head_hidden_size = main_config.policy.model.critic_head_hidden_size = 16
main_config.policy.eval.evaluator.eval_freq = 15
main_config.env.evaluator_env_num = main_config.env.n_evaluator_episode = 1
"""


def _resume_config(cwd: str, name: str, exp: str) -> None:
    if name in ("dqn", "c51", "ppo", "a2c"):
        path = write_user_config(cwd, CARTPOLE.format(name), name, exp)
        with open(path, "a") as f:  # a fixed number of iterations: the run must not end at the stop value first
            f.write("\nmain_config.env.stop_value = 10 ** 9\n")
    else:
        path = write_user_config(cwd, PENDULUM.format(name), name, exp)
        with open(path, "a") as f:
            f.write(SMALL_PENDULUM)
    os.replace(path, os.path.join(cwd, f"{exp}.py"))


def _same(a, b) -> bool:
    if isinstance(a, torch.Tensor):
        return isinstance(b, torch.Tensor) and torch.equal(a, b)
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


@pytest.mark.parametrize("name,mode,n", [
    ("dqn", "serial", 300), ("c51", "serial", 150), ("ppo", "serial_onpolicy", 280), ("a2c", "serial_onpolicy", 200),
    ("sac", "serial", 60), ("ddpg", "serial", 44), ("td3", "serial", 44),
])
def test_user_policy_resumes_exactly_after_ctrl_c(user_dir, name, mode, n):
    """An unstopped run, one stopped by SIGINT after two evaluations, and its resume end with the same parameters,
    target network, evaluations and the state the file keeps outside its state dicts (the target wrapper's update
    count, SAC's log(alpha), DDPG / TD3's update counter: TD3 updates its actor every second iteration)."""
    cwd = str(user_dir)
    for exp in ("full", "part"):
        _resume_config(cwd, name, exp)
    full = _ding(["-m", mode, "-c", "full.py", "--train-iter", str(n)], cwd)
    part = _ding(["-m", mode, "-c", "part.py", "--train-iter", str(n)], cwd)
    try:
        deadline = time.time() + 120
        while time.time() < deadline:
            if os.path.exists("part/log/eval.csv") and len(read_eval_csv("part/log/eval.csv")) >= 2:
                break
            time.sleep(0.02)
        part.send_signal(signal.SIGINT)
        out_part, _ = part.communicate(timeout=120)
        out_full, _ = full.communicate(timeout=300)
    finally:
        for proc in (full, part):
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    assert full.returncode == 0, out_full
    stopped_at = read_result("part")["train_iter"]
    if part.returncode == 0 and stopped_at == n:  # finished before the signal arrived: nothing to resume
        pytest.fail("the run ended before it could be interrupted; raise n")
    assert part.returncode == 130, out_part
    assert 0 < stopped_at < n
    resumed = _ding(["-m", mode, "-c", "part.py", "--train-iter", str(n), "--resume"], cwd)
    out_res, _ = resumed.communicate(timeout=300)
    assert resumed.returncode == 0, out_res
    assert f"resumed from part/ckpt/iteration_{stopped_at}.pth.tar" in out_res
    evals = [[(r["train_iter"], r["env_step"], r["eval_return_mean"]) for r in read_eval_csv(f"{e}/log/eval.csv")]
             for e in ("full", "part")]
    assert evals[0] == evals[1]
    a = torch.load(f"full/ckpt/iteration_{n}.pth.tar", weights_only=False)
    b = torch.load(f"part/ckpt/iteration_{n}.pth.tar", weights_only=False)
    assert "model" in a and ("target_model" in a) == (name not in ("ppo", "a2c"))
    for key in [k for k in ("model", "target_model") if k in a]:
        assert a[key].keys() == b[key].keys() and all(torch.equal(a[key][k], b[key][k]) for k in a[key])
    extra = a.get("ding_extra_state", {})
    if name == "sac":
        assert {"_log_alpha", "_alpha"} <= extra.keys()
    if name in ("ddpg", "td3"):
        assert extra["_forward_learn_cnt"] == {"counter": n}
    assert _same(extra, b.get("ding_extra_state", {}))


def test_a_typo_in_a_key_the_user_policy_declares_is_still_an_error(user_dir, capsys):
    config = write_user_config(str(user_dir), CARTPOLE.format("dqn"), "dqn", "user_dqn")
    with open(config) as f:
        text = f.read()
    with open(config, "w") as f:
        f.write(text.replace("update_per_collect=5", "update_per_colect=5"))
    assert main(["-m", "serial", "-c", config, "-s", "0", "--train-iter", "2"]) != 0
    err = capsys.readouterr().err
    assert "policy.learn.update_per_colect: unknown key" in err and "did you mean 'update_per_collect'?" in err


def test_multi_gpu_is_refused_in_one_line(user_dir, capsys):
    config = write_user_config(str(user_dir), CARTPOLE.format("dqn"), "dqn", "user_dqn")
    with open(config) as f:
        text = f.read()
    with open(config, "w") as f:
        f.write(text.replace("cuda=False,", "cuda=False, multi_gpu=True,", 1))
    assert main(["-m", "serial", "-c", config, "-s", "0", "--train-iter", "2"]) != 0
    assert "policy.multi_gpu: True is not supported" in capsys.readouterr().err
