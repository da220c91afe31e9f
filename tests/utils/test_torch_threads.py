"""The thread default for a loop built by hand: the first ding worker built in a process sets torch to one thread,
unless the user chose a count (``torch.set_num_threads``, ``OMP_NUM_THREADS``, ``DING_TORCH_THREADS``).

The behaviour is checked in fresh subprocesses (the test process has its own thread count, set by conftest); the
in-process tests only check that each worker's constructor calls the helper.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import torch

from ding.utils import torch_threads

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
THREAD_VARS = ("DING_TORCH_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")

# Builds the workers of the SPEC 1a loop by hand (policy first, then the others) and reports the thread counts and
# the ding.threads log lines as JSON. argv[1]: a count to pass to torch.set_num_threads first, or "-".
_SCRIPT = r"""
import json, logging, sys
lines = []
class Keep(logging.Handler):
    def emit(self, record):
        lines.append(record.getMessage())
log = logging.getLogger("ding.threads")
log.addHandler(Keep())
log.setLevel(logging.INFO)
import torch
start = torch.get_num_threads()
if sys.argv[1] != "-":
    torch.set_num_threads(int(sys.argv[1]))
from ding.config import compile_config
from ding.envs import BaseEnvManager
from ding.policy import DQNPolicy
from ding.utils.torch_threads import torch_start_threads
from ding.worker import BaseLearner, InteractionSerialEvaluator, SampleSerialCollector
from dizoo.classic_control.cartpole.config.cartpole_dqn_config import main_config
from dizoo.classic_control.cartpole.envs.cartpole_env import CartPoleEnv
cfg = compile_config(main_config, BaseEnvManager, DQNPolicy, BaseLearner, SampleSerialCollector,
                     InteractionSerialEvaluator, save_cfg=False)
policy = DQNPolicy(cfg.policy)
after_policy = torch.get_num_threads()
env = BaseEnvManager([lambda: CartPoleEnv({})], cfg.env.manager)
learner = BaseLearner(cfg.policy.learn.learner, policy.learn_mode, exp_name="threads")
collector = SampleSerialCollector(cfg.policy.collect.collector, env, policy.collect_mode, exp_name="threads")
evaluator = InteractionSerialEvaluator(cfg.policy.eval.evaluator, env, policy.eval_mode, exp_name="threads")
for worker in (collector, evaluator, learner):
    worker.close()
print(json.dumps(dict(start=start, estimate=torch_start_threads(), after_policy=after_policy,
                      after_all=torch.get_num_threads(), log=lines)))
"""


def _run(tmp_path, set_threads: int | None = None, **env_vars: str) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    env.update(env_vars)
    env["PYTHONPATH"] = ROOT + os.pathsep + env.get("PYTHONPATH", "")
    arg = "-" if set_threads is None else str(set_threads)
    proc = subprocess.run([sys.executable, "-c", _SCRIPT, arg], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_a_policy_built_by_hand_gets_one_thread_and_says_so_once(tmp_path):
    out = _run(tmp_path)
    # the estimate of torch's own start value is what torch really started with here (no thread variable set)
    assert out["estimate"] == out["start"], out
    assert out["after_policy"] == 1 and out["after_all"] == 1, out
    if out["start"] == 1:  # a one-core machine: torch already had the default, nothing to say
        assert out["log"] == [], out
    else:
        assert len(out["log"]) == 1, out  # five workers built, one line
        assert "1 CPU thread" in out["log"][0] and "DING_TORCH_THREADS" in out["log"][0], out


def test_an_explicit_torch_set_num_threads_is_kept(tmp_path):
    chosen = torch_threads.torch_start_threads() + 1  # differs from torch's start value and from the default
    out = _run(tmp_path, set_threads=chosen)
    assert out["after_policy"] == chosen and out["after_all"] == chosen and out["log"] == [], out


def test_omp_num_threads_is_kept(tmp_path):
    out = _run(tmp_path, OMP_NUM_THREADS="2")  # torch caps it at the CPUs it may use
    assert out["after_all"] == out["start"] and out["log"] == [], out
    assert out["start"] == 2 or os.cpu_count() == 1, out


def test_ding_torch_threads_is_applied(tmp_path):
    out = _run(tmp_path, DING_TORCH_THREADS="3")
    assert out["after_policy"] == 3 and out["after_all"] == 3 and out["log"] == [], out


def test_a_bad_ding_torch_threads_is_one_clear_error(monkeypatch):
    monkeypatch.setenv("DING_TORCH_THREADS", "four")
    with pytest.raises(ValueError, match=r"DING_TORCH_THREADS='four' \(environment variable\): give a positive"):
        torch_threads.setup_torch_threads()


# -------------------------------------------------------------- in process: each constructor calls the helper
@pytest.fixture
def fresh_helper(monkeypatch):
    """The helper as in a fresh process, with the thread count left alone (torch's count counts as the user's)."""
    for var in THREAD_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setattr(torch_threads, "_THREADS_SET", False)
    monkeypatch.setattr(torch_threads, "_DEFAULT_CHECKED", False)
    monkeypatch.setattr(torch_threads, "_START_THREADS", torch.get_num_threads() + 1)
    yield
    assert torch.get_num_threads() == 1  # conftest's count, untouched


@pytest.mark.parametrize("first", ["env_manager", "policy", "learner", "collector", "evaluator"])
def test_each_worker_constructor_applies_the_default(first, fresh_helper, in_tmp_dir, monkeypatch):
    from ding.config import compile_config
    from ding.envs import BaseEnvManager
    from ding.policy import DQNPolicy
    from ding.worker import BaseLearner, InteractionSerialEvaluator, SampleSerialCollector
    from dizoo.classic_control.cartpole.config.cartpole_dqn_config import main_config
    from dizoo.classic_control.cartpole.envs.cartpole_env import CartPoleEnv

    cfg = compile_config(main_config, BaseEnvManager, DQNPolicy, BaseLearner, SampleSerialCollector,
                         InteractionSerialEvaluator, save_cfg=False)
    built: list = []

    def build(name: str):
        if name == "env_manager":
            return BaseEnvManager([lambda: CartPoleEnv({})], cfg.env.manager)
        if name == "policy":
            return DQNPolicy(cfg.policy)
        policy, env = built[0], built[1]
        if name == "learner":
            return BaseLearner(cfg.policy.learn.learner, policy.learn_mode, exp_name="t")
        if name == "collector":
            return SampleSerialCollector(cfg.policy.collect.collector, env, policy.collect_mode, exp_name="t")
        return InteractionSerialEvaluator(cfg.policy.eval.evaluator, env, policy.eval_mode, exp_name="t")

    if first in ("learner", "collector", "evaluator"):
        built += [build("policy"), build("env_manager")]
        assert torch_threads._DEFAULT_CHECKED
        monkeypatch.setattr(torch_threads, "_DEFAULT_CHECKED", False)
    worker = build(first)
    assert torch_threads._DEFAULT_CHECKED, f"{first} did not apply the thread default"
    if hasattr(worker, "close"):
        worker.close()


_WORKER_THREAD = r"""
import json, os, sys, threading, time, torch
torch.set_num_threads(1)  # in the main thread, as the pipelines and roles do
from ding.model.template.q_learning import DQN
from ding.utils.torch_threads import torch_threads_in_this_thread
net = DQN(obs_shape=4, action_shape=2, encoder_hidden_size_list=[128, 128, 64], dueling=True)
use_helper = sys.argv[1] == "1"
def cpu_s(tid):
    try:
        with open(f"/proc/self/task/{tid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except OSError:  # a thread that ended meanwhile
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
before = set(os.listdir("/proc/self/task"))
spent, others = [], []
def work():
    if use_helper:
        torch_threads_in_this_thread()
    t0 = time.thread_time()
    with torch.no_grad():
        for _ in range(3000):  # a collector's evaluation: small batches, one forward per step
            net(torch.randn(5, 4))["logit"].argmax(dim=-1)
        big = torch.ones(2_000_000)
        for _ in range(200):  # and ops large enough for a parallel region (torch splits above 32k elements)
            big.add_(1.0)
    spent.append(time.thread_time() - t0)
    # the threads started since, read while this thread still runs: OpenMP ends a thread's pool when it exits
    me = str(threading.get_native_id())
    others.append(sum(cpu_s(i) for i in set(os.listdir("/proc/self/task")) - before - {me}))
t = threading.Thread(target=work)
t.start()
t.join()
print(json.dumps({"worker_cpu_s": spent[0], "other_threads_cpu_s": others[0]}))
"""


@pytest.mark.skipif(not os.path.isdir("/proc/self/task"), reason="counts threads through Linux's /proc")
def test_a_worker_thread_runs_torch_ops_on_one_thread_after_the_helper():
    """OpenMP keeps its thread count per thread: a thread started after ``torch.set_num_threads(1)`` opens its
    parallel regions with the machine's cores, and the pool's workers spin beside it (in parallel mode: a collector's
    task thread, 4 s of CPU in a spinning libgomp worker). With the helper no other thread burns CPU for its ops."""
    env = {k: v for k, v in os.environ.items() if k not in THREAD_VARS}
    out = subprocess.run([sys.executable, "-c", _WORKER_THREAD, "1"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]
    got = json.loads(out.stdout.strip().splitlines()[-1])
    # without the helper, on 2 cores: each spinning pool thread burns about as much CPU as the worker thread itself
    assert got["other_threads_cpu_s"] < 0.25 * got["worker_cpu_s"] + 0.05, got
