"""``ding.Trainer``: rounds as result dicts, the same run as ``serial_pipeline``, break/save/restore exactly, Ctrl-C
pausing, out-of-schedule evaluation, the round callbacks, and ``load_policy`` reproducing the evaluator's actions."""
from __future__ import annotations

import copy
import csv
import os

import numpy as np
import pytest
import torch

import ding
from ding.engine.training_view import TrainingInterrupted
from ding.entry import serial_pipeline, serial_pipeline_onpolicy
from ding.utils import CallbackError, CheckpointError

from . import _trainer_plugins
from .conftest import read_result


def _cfg(exp_name="tr", callbacks=None):
    from dizoo.classic_control.cartpole.config.cartpole_dqn_config import create_config, main_config

    main, create = copy.deepcopy(main_config), copy.deepcopy(create_config)
    main.exp_name = exp_name
    main.policy.learn.learner = dict(hook=dict(log_show_after_iter=100000))
    if callbacks:
        main.policy.collect.collector = dict(callbacks=callbacks, import_names=["tests.entry._trainer_plugins"])
    return main, create


def _eval_rows(exp_dir):
    with open(os.path.join(exp_dir, "log", "eval.csv"), newline="") as f:
        return [(int(r["train_iter"]), int(r["env_step"]), float(r["eval_return_mean"]), float(r["eval_return_std"]))
                for r in csv.DictReader(f)]


def _same_params(a, b):
    pa, pb = a.learn_mode.state_dict()["model"], b.learn_mode.state_dict()["model"]
    return pa.keys() == pb.keys() and all(torch.equal(pa[k], pb[k]) for k in pa)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    """serial_pipeline's run of the CartPole DQN config, seed 0: its eval curve, result and final policy."""
    cwd = os.getcwd()
    os.chdir(tmp_path_factory.mktemp("reference"))
    try:
        policy = serial_pipeline(_cfg("ref"), seed=0)
        return {"rows": _eval_rows("ref"), "result": read_result("ref"), "policy": policy}
    finally:
        os.chdir(cwd)


def test_iterating_a_trainer_is_the_serial_pipeline_run(in_tmp_dir, reference):
    results = []
    with ding.Trainer(_cfg(), seed=0) as trainer:
        for r in trainer:
            results.append(r)
        assert trainer.done
    assert results[-1]["done"] and results[-1]["stop_reason"] == "stop_value"
    assert results[-1]["eval_return"] >= 195 and results[-1]["env_step"] == reference["result"]["env_step"]
    assert [r["done"] for r in results].count(True) == 1
    assert _eval_rows("tr") == reference["rows"]
    assert _same_params(trainer.policy, reference["policy"])
    # the flat result dicts add up and carry the learner's losses and the episodes of each round
    steps = [r["env_step"] for r in results]
    assert steps == sorted(steps) and results[0]["round"] == 1 and results[-1]["round"] == len(results)
    assert sum(r["train_iters_this_round"] for r in results) == results[-1]["train_iter"]
    trained = [r for r in results if r["train_iters_this_round"]]
    assert trained and all(np.isfinite(r["learn/total_loss"]) and "learn/q_value" in r for r in trained)
    assert sum(r["episodes_this_round"] for r in results) > 5
    with_episodes = [r for r in results if r["episodes_this_round"]]
    assert all(r["episode_return_min"] <= r["episode_return_mean"] <= r["episode_return_max"] for r in with_episodes)
    assert sum(r["evaluated"] for r in results) == len(reference["rows"])
    assert all(r["time_round_s"] >= r["time_train_s"] + r["time_collect_s"] for r in results)
    assert read_result("tr")["ended"] == "stop_value"


def test_break_close_restore_continues_exactly(in_tmp_dir, reference):
    with ding.Trainer(_cfg(), seed=0) as trainer:
        for r in trainer:
            if r["round"] == 40:
                break
        assert not trainer.done and trainer.train_iter > 0
        more = trainer.train()  # breaking out left it usable
        assert more["round"] == 41
    assert read_result("tr")["ended"] == "closed"
    with pytest.raises(RuntimeError, match="closed"):
        trainer.train()
    restored = ding.Trainer.restore("tr")
    with restored:
        last = restored.run()
    assert last["stop_reason"] == "stop_value" and last["env_step"] == reference["result"]["env_step"]
    assert _eval_rows("tr") == reference["rows"]
    assert _same_params(restored.policy, reference["policy"])


def test_save_to_a_directory_forks_the_run(in_tmp_dir, reference):
    with ding.Trainer(_cfg(), seed=0) as trainer:
        for r in trainer:
            if r["round"] == 60:
                fork_ckpt = trainer.save("fork")
                break
        assert os.path.isfile(fork_ckpt) and fork_ckpt.startswith(os.path.join("fork", "ckpt"))
        with pytest.raises(CheckpointError, match="not an empty directory"):
            trainer.save("fork")
        trainer.run()  # the original goes on in its own directory
    assert _eval_rows("tr") == reference["rows"]
    with ding.Trainer.restore("fork") as forked:
        assert forked.exp_dir == "fork"
        forked.run()
    assert _eval_rows("fork") == reference["rows"] and _same_params(forked.policy, reference["policy"])


def test_ctrl_c_inside_train_pauses_with_a_checkpoint_and_the_trainer_goes_on(in_tmp_dir, reference):
    cfg = _cfg(callbacks=[dict(type="test_sigint_at_iter", train_iter=300)])
    with ding.Trainer(cfg, seed=0) as trainer:
        with pytest.raises(TrainingInterrupted):
            for _ in trainer:
                pass
        assert not trainer.done
        assert any(f.startswith("iteration_") for f in os.listdir(os.path.join("tr", "ckpt")))
        last = trainer.run()
    assert last["stop_reason"] == "stop_value"
    assert _eval_rows("tr") == reference["rows"] and _same_params(trainer.policy, reference["policy"])


def test_evaluate_between_rounds_leaves_the_run_unchanged(in_tmp_dir, reference):
    evals = []
    with ding.Trainer(_cfg(), seed=0) as trainer:
        for r in trainer:
            if r["round"] % 25 == 0:
                evals.append(trainer.evaluate(n_episode=2))
    assert len(evals) >= 3 and all(len(e["eval_episode_return"]) == 2 for e in evals)
    assert _eval_rows("tr") == reference["rows"] and _same_params(trainer.policy, reference["policy"])


def test_a_finished_run_refuses_more_training_and_says_how(in_tmp_dir):
    with ding.Trainer(_cfg(), seed=0, max_env_step=200) as trainer:
        trainer.run()
        assert trainer.done and trainer.last_result["stop_reason"] == "limit"
        with pytest.raises(RuntimeError, match=r"extend=True"):
            trainer.train()
    with ding.Trainer.restore("tr", extend=True, max_env_step=400) as more:
        last = more.run()
    assert last["stop_reason"] == "limit" and 400 <= last["env_step"] < 500


def test_restore_names_what_is_wrong(in_tmp_dir):
    with pytest.raises(CheckpointError, match="not a ding run directory"):
        ding.Trainer.restore("nowhere")
    with pytest.raises(TypeError, match="Trainer: input_cfg"):
        ding.Trainer(42)


def test_on_policy_trainer_is_the_onpolicy_pipeline_run(in_tmp_dir):
    from dizoo.classic_control.cartpole.config.cartpole_ppo_config import create_config, main_config

    def cfg(name):
        main, create = copy.deepcopy(main_config), copy.deepcopy(create_config)
        main.exp_name = name
        return main, create

    serial_pipeline_onpolicy(cfg("ppo_ref"), seed=0, max_env_step=2000)
    with ding.Trainer(cfg("ppo_tr"), seed=0, max_env_step=2000) as trainer:
        results = list(trainer)
    assert trainer.on_policy and results[-1]["stop_reason"] in ("limit", "stop_value")
    assert any("learn/policy_loss" in r for r in results)
    assert _eval_rows("ppo_tr") == _eval_rows("ppo_ref")
    assert read_result("ppo_tr")["env_step"] == read_result("ppo_ref")["env_step"]


# ---------------------------------------------------------------------------------------------- round callbacks
def test_round_callbacks_are_called_at_their_points_with_their_arguments(in_tmp_dir):
    _trainer_plugins.CALLS.clear()
    with ding.Trainer(_cfg(callbacks=[dict(type="test_round_recorder")]), seed=0, max_env_step=400) as trainer:
        results = list(trainer)
    calls = _trainer_plugins.CALLS
    names = [c[0] for c in calls]
    # each trajectory piece is post-processed before the collect call's data is finished, and its samples reach
    # on_sample_end carrying what on_postprocess_trajectory wrote
    assert names.index("on_postprocess_trajectory") < names.index("on_sample_end")
    assert all(c[2] >= c[3] >= 1 for c in calls if c[0] == "on_postprocess_trajectory")
    assert all(c[2] for c in calls if c[0] == "on_sample_end")
    # one on_learn_on_batch per learner update, before it (train_iter = the iteration about to run), batch size 64
    learn = [c for c in calls if c[0] == "on_learn_on_batch"]
    assert len(learn) == results[-1]["train_iter"]
    assert [c[2] for c in learn] == list(range(len(learn))) and {c[1] for c in learn} == {64}
    # one on_train_result per round, after the round, and what the callbacks added is in the result
    assert [c[1] for c in calls if c[0] == "on_train_result"] == [r["round"] for r in results]
    assert all(r["recorder_round"] == r["round"] for r in results)
    assert all(r.get("batch_seen") == 64 * r["train_iters_this_round"] for r in results if r["train_iters_this_round"])


@pytest.mark.parametrize("method", ["on_postprocess_trajectory", "on_learn_on_batch", "on_train_result"])
def test_a_raising_callback_names_itself(in_tmp_dir, method):
    cfg = _cfg(callbacks=[dict(type="test_raising_callback", method=method)])
    with pytest.raises(CallbackError, match=rf"RaisingCallback\.{method} raised ValueError: boom") as info:
        with ding.Trainer(cfg, seed=0, max_env_step=600) as trainer:
            trainer.run()
    assert isinstance(info.value.__cause__, ValueError)
    with pytest.raises(RuntimeError, match="an earlier round failed"):
        trainer.train()


# ---------------------------------------------------------------------------------------------- load_policy
def test_load_policy_reproduces_the_evaluators_actions(in_tmp_dir):
    serial_pipeline(_cfg("run"), seed=0)
    loaded = ding.load_policy("run")  # the evaluator's best checkpoint
    assert loaded.checkpoint.endswith("ckpt_best.pth.tar")
    # the evaluator's own run of that checkpoint (config, envs, seeds as ding -m eval), recording what it acts on
    from functools import partial

    from ding.envs import create_env_manager, get_vec_env_setting
    from ding.policy import create_policy
    from ding.worker import create_serial_evaluator, load_checkpoint_file

    cfg = loaded.cfg
    policy = create_policy(copy.deepcopy(cfg.policy), enable_field=["eval"])
    policy.eval_mode.load_state_dict({"model": load_checkpoint_file(loaded.checkpoint)["model"]})
    recorded = []

    class Recording:  # the eval-mode view, recording each observation and the action the evaluator got for it
        def __init__(self, inner):
            self.inner = inner

        def forward(self, data, **kwargs):
            out = self.inner.forward(data, **kwargs)
            recorded.extend((np.array(data[i], dtype=np.float32), int(out[i]["action"])) for i in data)
            return out

        def __getattr__(self, name):
            return getattr(self.inner, name)

    env_fn, _, env_cfgs = get_vec_env_setting(cfg.env, collect=False)
    env = create_env_manager(cfg.env.manager, [partial(env_fn, cfg=c) for c in env_cfgs])
    env.seed(0, dynamic_seed=False)
    evaluator = create_serial_evaluator(cfg.policy.eval.evaluator, env=env, policy=Recording(policy.eval_mode),
                                        exp_name="run")
    try:
        _, info = evaluator.eval()
    finally:
        evaluator.close()
    assert np.mean(info["eval_episode_return"]) >= 195 and len(recorded) > 500
    assert len({a for _, a in recorded}) == 2  # both actions occur: the comparison can fail
    assert [int(loaded.compute_single_action(o)) for o, _ in recorded] == [a for _, a in recorded]
    batch = np.stack([o for o, _ in recorded])
    assert loaded.compute_actions(batch).tolist() == [a for _, a in recorded]
    latest = ding.load_policy(os.path.join("run"), which="latest")
    assert "iteration_" in latest.checkpoint and latest.train_iter == read_result("run")["train_iter"]
    with pytest.raises(CheckpointError, match="does not exist"):
        ding.load_policy("no_such_run")
    with pytest.raises(TypeError, match="explore=True"):
        loaded.compute_single_action(recorded[0][0], eps=0.1)
    explored = loaded.compute_single_action(recorded[0][0], explore=True, eps=1.0)
    assert int(explored) in (0, 1)


def test_a_dropped_trainer_releases_its_directory(in_tmp_dir):
    import gc

    from ding.utils import DirLock, LockError

    trainer = ding.Trainer(_cfg(), seed=0, max_env_step=100)
    trainer.train()
    with pytest.raises(LockError):
        DirLock("tr", what="run").acquire()
    del trainer
    gc.collect()
    lock = DirLock("tr", what="run").acquire()  # released with the trainer
    lock.release()
