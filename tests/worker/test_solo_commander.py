"""SoloCommander's decisions without any process or network: pacing, evaluation scheduling, failures, limits."""
from __future__ import annotations

import copy

import pytest

from ding.config import compile_config_parallel
from ding.parallel.protocol import CollectResult, EvalResult, LearnerStarted, LearnInfo
from ding.worker import SoloCommander


@pytest.fixture
def commander(in_tmp_dir):
    from dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config import (
        create_config,
        main_config,
        system_config,
    )

    main, create, system = (copy.deepcopy(c) for c in (main_config, create_config, system_config))
    main.policy.collect.n_sample = 10
    main.policy.learn.update_per_collect = 5  # 0.5 train iterations per sample
    main.policy.learn.batch_size = 4
    main.policy.eval.evaluator.eval_freq = 20
    main.policy.other.commander.update(eval_interval=1e9)
    cfg = compile_config_parallel(main, create, system, save_cfg=False)
    c = SoloCommander(cfg.main)
    c._pacing.ahead = 20  # (derived: max(batch_size, 2 * n_sample * collectors) = 40)
    c.increase_collector_task_space()
    c.increase_collector_task_space()
    return c


def _eval(mean):
    return EvalResult.from_json({"eval_flag": True, "eval_return_mean": mean, "policy_iter": 0})


def _finish_collect(c, task, samples=10):
    c.finish_collector_task(task["task_id"], CollectResult(metadata=[], envstep=samples, sample_count=samples))


def test_no_task_before_the_first_policy_then_an_evaluation_first(commander):
    c = commander
    assert c.get_collector_task("collector0") is None  # nothing published yet
    c.learner_started("t", LearnerStarted.from_json({"learner_step": 0, "policy_iter": 0}))
    first = c.get_collector_task("collector0")
    assert first["eval_flag"] is True and first["best_return"] is None
    second = c.get_collector_task("collector1")
    assert second["eval_flag"] is False and second["n_sample"] == 10 and 0.9 < second["collect_setting"]["eps"] <= 0.95


def test_pacing_keeps_the_serial_ratio(commander):
    c = commander
    c.learner_started("t", LearnerStarted.from_json({"learner_step": 0, "policy_iter": 0}))
    ev = c.get_collector_task("collector0")
    c.finish_collector_task(ev["task_id"], _eval(10.0))
    tasks = []
    while (t := c.get_collector_task("collector1")) is not None:
        tasks.append(t)
        _finish_collect(c, t)
    # collection runs at most `ahead` (20) samples ahead of what the learner consumed (nothing yet)
    assert c.status()["pushed"] == 20
    served = 0
    while c.learner_may_train(buffer_count=c.status()["pushed"]):
        c.batch_served()
        served += 1
    assert served == 10  # 0.5 iterations per sample * 20 samples
    assert c.get_collector_task("collector1") is not None  # the learner consumed: collection may go on


def test_learner_needs_a_full_batch(commander):
    c = commander
    c.learner_started("t", LearnerStarted.from_json({"learner_step": 0, "policy_iter": 0}))
    assert not c.learner_may_train(buffer_count=3)


def test_failed_evaluation_is_handed_out_again_and_stop_value_ends_the_run(commander):
    c = commander
    c.learner_started("t", LearnerStarted.from_json({"learner_step": 0, "policy_iter": 0}))
    ev = c.get_collector_task("collector0")
    assert ev["eval_flag"]
    assert not c.get_collector_task("collector1")["eval_flag"]  # one evaluation at a time
    c.notify_fail_collector_task(ev)
    again = c.get_collector_task("collector0")
    assert again["eval_flag"] is True
    assert c.finish_collector_task(again["task_id"], EvalResult.from_json({"eval_flag": True, "eval_return_mean": 199.0,
                                                      "policy_iter": 0})) is True
    assert "stop value" in c.end_reason and c.get_collector_task("collector0") is None
    assert c.eval_history[-1]["eval_return_mean"] == 199.0


def test_evaluations_follow_eval_freq_and_only_new_policies(commander):
    c = commander
    c.learner_started("t", LearnerStarted.from_json({"learner_step": 0, "policy_iter": 0}))
    ev = c.get_collector_task("collector0")
    c.finish_collector_task(ev["task_id"], _eval(10.0))
    c.update_learner_info("t", LearnInfo.from_json({"learner_step": 19, "policy_iter": 19}))
    assert not c.get_collector_task("collector0")["eval_flag"]
    c.update_learner_info("t", LearnInfo.from_json({"learner_step": 20, "policy_iter": 20}))
    assert c.get_collector_task("collector1")["eval_flag"]


def test_limits_end_the_run(commander):
    c = commander
    c.max_env_step = 15
    c.learner_started("t", LearnerStarted.from_json({"learner_step": 0, "policy_iter": 0}))
    ev = c.get_collector_task("collector0")
    c.finish_collector_task(ev["task_id"], _eval(10.0))
    for _ in range(2):
        _finish_collect(c, c.get_collector_task("collector0"))
    assert "max_env_step" in c.end_reason


def test_restarted_learner_moves_the_step_back(commander):
    c = commander
    c.learner_started("t", LearnerStarted.from_json({"learner_step": 0, "policy_iter": 0}))
    c.update_learner_info("t", LearnInfo.from_json({"learner_step": 300, "policy_iter": 300}))
    c.learner_started("t2", LearnerStarted.from_json({"learner_step": 250, "policy_iter": 250}))
    assert c.status()["learner_step"] == 250 and c.status()["policy_iter"] == 250


def test_state_round_trip_continues_counters_but_not_pacing(commander, in_tmp_dir):
    import json

    c = commander
    c.learner_started("t", LearnerStarted.from_json({"learner_step": 0, "policy_iter": 0}))
    ev = c.get_collector_task("collector0")
    c.finish_collector_task(ev["task_id"], _eval(42.0))
    _finish_collect(c, c.get_collector_task("collector0"), samples=10)
    state = json.loads(json.dumps(c.state_dict()))  # what parallel_state.json holds
    assert state["envstep"] == 10 and state["best_return"] == 42.0 and state["reached_stop_value"] is False
    fresh = SoloCommander(c._cfg)  # the config it was built from
    fresh.load_state_dict(state)
    status = fresh.status()
    assert status["envstep"] == 10 and status["best_return"] == 42.0 and status["pushed"] == 0
    assert fresh.eval_history == c.eval_history


def test_evaluation_is_recorded_at_the_env_steps_its_policy_was_trained_with(commander):
    """Collectors go on collecting while an evaluation runs; the record carries the env steps collected when the
    evaluated policy was published (what trained it, as in serial mode), not the count when the evaluation ended."""
    c = commander

    def collect():  # the learner consumes what pacing allows, then one more collect task (10 env steps)
        while c.learner_may_train(buffer_count=c.status()["pushed"]):
            c.batch_served()
        _finish_collect(c, c.get_collector_task("collector1"))

    c.learner_started("t", LearnerStarted.from_json({"learner_step": 0, "policy_iter": 0}))
    ev = c.get_collector_task("collector0")
    c.finish_collector_task(ev["task_id"], _eval(10.0))
    assert c.eval_history[-1].env_step == 0
    collect(), collect()
    c.update_learner_info("t", LearnInfo(learner_step=10, policy_iter=10))  # published at 20 env steps
    collect()
    c.update_learner_info("t", LearnInfo(learner_step=20, policy_iter=20))  # published at 30
    collect(), collect()  # 50 when the evaluations end
    assert c.status()["envstep"] == 50
    for i, it in enumerate((10, 20, 30)):  # 30: not heard of yet (published after the last learn result)
        c.finish_collector_task(f"e{i}", EvalResult.from_json({"eval_flag": True, "eval_return_mean": 11.0,
                                                                "policy_iter": it}))
    assert [(r.train_iter, r.env_step) for r in c.eval_history[1:]] == [(10, 20), (20, 30), (30, 50)]


def test_learner_waits_for_an_evaluation_eval_lead_periods_past_the_last(commander):
    """eval_freq 20, EVAL_LEAD 2: after 40 batches past the last evaluation the learner waits until the next one is
    handed out -- unless there is nothing newer to evaluate (then it never waits for one that cannot come)."""
    c = commander
    c.learner_started("t", LearnerStarted.from_json({"learner_step": 0, "policy_iter": 0}))
    ev = c.get_collector_task("collector0")
    assert ev["eval_flag"] is True  # handed out at 0 batches served
    c._pacing.pushed = 1000  # plenty of data: only the evaluation gate can stop the learner
    served = 0
    while c.learner_may_train(buffer_count=1000):
        c.batch_served()
        served += 1
        c.update_learner_info("t", LearnInfo(learner_step=served, policy_iter=served))
    assert served == 40  # the evaluation of policy 0 is still running
    assert not c.learner_may_train(buffer_count=1000)
    c.finish_collector_task(ev["task_id"], _eval(10.0))  # policy 0 evaluated; 40 is published: one is due
    assert not c.learner_may_train(buffer_count=1000)
    ev2 = c.get_collector_task("collector0")
    assert ev2["eval_flag"] is True and c.learner_may_train(buffer_count=1000)  # handed out: the learner goes on
    c.finish_collector_task(ev2["task_id"], EvalResult.from_json({"eval_flag": True, "eval_return_mean": 10.0,
                                                                  "policy_iter": 40}))
    for _ in range(40):
        c.batch_served()  # 80 served, nothing newer than policy 40 published: no evaluation can come, no wait
    assert c.learner_may_train(buffer_count=1000)


def test_without_pacing_and_without_an_eval_lead_the_learner_never_waits():
    """``learner_iter_per_sample=0`` (Ape-X style) with an eval lead of 0 batches: the learner trains flat out."""
    from ding.parallel.commanders.pacing import Pacing

    pacing = Pacing(0.0, batch_size=4, n_sample=10, ahead=None, eval_lead_batches=0)
    pacing.evaluation_handed_out()
    for _ in range(5000):
        pacing.batch_served()
    assert pacing.learner_may_train(buffer_count=1000, eval_can_come=True) and pacing.collect_allowed(2)
    with pytest.raises(ValueError, match="below a batch"):  # collection and training would wait for each other
        Pacing(0.5, batch_size=64, n_sample=16, ahead=32, eval_lead_batches=0)


def test_one_evaluation_at_a_time_per_two_collectors_each_on_a_newer_policy(commander):
    c = commander  # 2 collectors: one evaluation at a time
    c.learner_started("t", LearnerStarted.from_json({"learner_step": 0, "policy_iter": 0}))
    assert c.get_collector_task("collector0")["eval_flag"] is True
    c.update_learner_info("t", LearnInfo(learner_step=20, policy_iter=20))
    assert c.get_collector_task("collector1")["eval_flag"] is False
    c.increase_collector_task_space()
    c.increase_collector_task_space()  # 4 collectors: two at once, the second on a newer policy than the first
    second = c.get_collector_task("collector2")
    assert second["eval_flag"] is True
    assert c.get_collector_task("collector3")["eval_flag"] is False  # two running: no third
    c.finish_collector_task(second["task_id"], EvalResult.from_json({"eval_flag": True, "eval_return_mean": 9.0,
                                                                      "policy_iter": 20}))
    c.update_learner_info("t", LearnInfo(learner_step=40, policy_iter=40))
    assert c.get_collector_task("collector2")["eval_flag"] is True


def test_an_evaluation_is_one_task_on_the_live_policy_and_a_failed_one_runs_again(commander):
    c = commander
    c.learner_started("t", LearnerStarted.from_json({"learner_step": 0, "policy_iter": 0}))
    ev = c.get_collector_task("collector0")
    assert ev["eval_flag"] and ev["policy_id"] == "policy"
    assert not c.get_collector_task("collector1")["eval_flag"]  # one task, not shards on every collector
    c.update_learner_info("t", LearnInfo(learner_step=5, policy_iter=5))
    c.notify_fail_collector_task(ev)
    again = c.get_collector_task("collector1")
    assert again["eval_flag"] and again["policy_id"] == "policy"  # before eval_freq iterations have passed


@pytest.mark.parametrize("key, value, match", [
    # a buffer that can never hold a batch
    ("other.replay_buffer.replay_buffer_size", 32, "batch of 64 needs 64 stored items.*replay_buffer_size is 32"),
])
def test_settings_under_which_the_learner_never_gets_a_batch_are_config_errors(in_tmp_dir, key, value, match):
    """Found in a real run: collectors paced to run fewer samples ahead than a batch (once collect_ahead_samples=32
    with batch_size 64) waited after the first evaluation for ever, no error, no exit (the stall watchdog counts only
    time with a batch's worth of data in the buffer). How far they run ahead is derived now (at least a batch); a
    buffer smaller than a batch is the same wait."""
    from ding.parallel.commanders.solo import SoloCommander
    from ding.utils import ConfigError
    from dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config import (
        create_config,
        main_config,
        system_config,
    )

    main = copy.deepcopy(main_config)
    section, name = key.rsplit(".", 1)
    node = main.policy
    for part in section.split("."):
        node = node[part]
    node[name] = value
    cfg = compile_config_parallel(main, copy.deepcopy(create_config), copy.deepcopy(system_config), save_cfg=False)
    with pytest.raises(ConfigError, match=match):
        SoloCommander(cfg.main)


@pytest.mark.parametrize("key, value, match", [
    ("eval_interval", 0, r"policy.other.commander.eval_interval: must be > 0, got 0"),
    ("learner_task_space", 2, r"policy.other.commander.learner_task_space: must be in \[1, 1\], got 2 \(accepted for "
                              r"DI-engine configs"),
    ("learner_iter_per_sample", -0.5, r"policy.other.commander.learner_iter_per_sample: must be >= 0, got -0.5"),
])
def test_the_commanders_declared_ranges_are_checked_when_the_config_compiles(in_tmp_dir, key, value, match):
    """SoloCommander declares its ranges in ``config_ranges`` (no hand checks): a bad value fails the compile."""
    from ding.config import compile_config_parallel
    from ding.utils import ConfigError
    from dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config import (
        create_config,
        main_config,
        system_config,
    )

    main = copy.deepcopy(main_config)
    main.policy.other.commander[key] = value
    with pytest.raises(ConfigError, match=match):
        compile_config_parallel(main, copy.deepcopy(create_config), copy.deepcopy(system_config), save_cfg=False)


def test_a_resumed_coordinator_never_reuses_the_collect_task_ids_of_the_run_it_continues(in_tmp_dir, monkeypatch):
    """Found in a docs walk: a resumed run's coordinator counted collect tasks from 0 again, so its tasks wrote data
    files under the names the saved replay buffer referred to (overwriting them), and the buffer never grew past the
    first session's items. Each coordinator (a fresh process: the counter restarts) tags its ids."""
    import itertools

    import ding.parallel.commanders.solo as solo
    from dizoo.classic_control.cartpole.config.parallel.cartpole_dqn_config import (
        create_config,
        main_config,
        system_config,
    )

    def session_ids() -> set[str]:
        monkeypatch.setattr(solo, "_uid", itertools.count())  # as in a new coordinator process
        cfg = compile_config_parallel(*(copy.deepcopy(c) for c in (main_config, create_config, system_config)),
                                      save_cfg=False)
        c = SoloCommander(cfg.main)
        for _ in range(4):
            c.increase_collector_task_space()
        c.learner_started("t", LearnerStarted.from_json({"learner_step": 0, "policy_iter": 0}))
        ids = set()
        while (t := c.get_collector_task("collector0")) is not None:
            ids.add(t["task_id"])
        assert ids, "the commander handed out no task"
        return ids

    first, resumed = session_ids(), session_ids()
    assert not first & resumed, sorted(first & resumed)
