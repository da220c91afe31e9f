"""The typed protocol of parallel mode: every record round-trips, every malformed message is one ProtocolError that
names the record and the field, no task name or payload key is spelled outside the protocol module, and the
protocol table of docs/parallel.md is the module's."""
from __future__ import annotations

import ast
import dataclasses
import math
import os

import pytest

from ding.parallel import protocol as pp
from ding.utils import DingError

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The modules of parallel mode that send, receive or decide on tasks and answers.
PARALLEL_MODULES = (
    "ding/parallel/coordinator/coordinator.py", "ding/parallel/coordinator/comm_coordinator.py",
    "ding/parallel/coordinator/data_ledger.py", "ding/parallel/commanders/base.py",
    "ding/parallel/commanders/solo.py", "ding/parallel/roles/role.py",
    "ding/parallel/roles/collector/base_comm.py", "ding/parallel/roles/collector/flask_fs.py",
    "ding/parallel/roles/collector/base_parallel.py",
    "ding/parallel/roles/collector/zergling.py", "ding/parallel/roles/learner/base.py",
    "ding/parallel/roles/learner/flask_fs.py", "ding/parallel/roles/collector/marine.py",
    "ding/parallel/commanders/one_vs_one.py", "ding/parallel/roles/learner_group/aggregator.py",
    "ding/parallel/roles/learner_group/group.py", "ding/parallel/roles/learner/batch_reader.py",
    "ding/parallel/roles/learner/trainer.py",
)
# (module, literal) -> why that string is not a payload key there.
ALLOWED = {
    ("ding/parallel/coordinator/coordinator.py", "seed"): "the compiled config's seed (cfg.seed), read to build tasks",
    ("ding/parallel/commanders/solo.py", "n_sample"): "the config key policy.collect.n_sample",
    ("ding/parallel/coordinator/coordinator.py", "path_data"): "the system_config key, checked first",
    ("ding/parallel/coordinator/coordinator.py", "path_policy"): "the system_config key, checked first",
    ("ding/parallel/roles/learner/batch_reader.py", "path_data"): "the role config's own path_data (confinement)",
    ("ding/parallel/roles/learner/flask_fs.py", "path_policy"): "the role config's own path_policy (confinement)",
    ("ding/parallel/roles/collector/flask_fs.py", "path_data"): "the role config's own path_data (confinement)",
    ("ding/parallel/roles/learner_group/aggregator.py", "path_data"): "the role config's path_data (rendezvous)",
    ("ding/parallel/roles/collector/flask_fs.py", "path_policy"): "the role config's own path_policy",
    ("ding/parallel/coordinator/learner_link.py", "skipped_files"): "the coordinator's counter (result file)",
    ("ding/parallel/roles/collector/zergling.py", "priority"): "a collected sample's own key (policy data)",
    ("ding/parallel/roles/learner/flask_fs.py", "batch_size"): "the policy attribute get_attribute('batch_size')",
    ("ding/parallel/commanders/solo.py", "envstep"): "DI-engine's command-mode info key (its "
                                                        "EpsCommandModePolicy reads info['envstep'])",
}


def _collect_task(**kw):
    return pp.CollectTask(**{**dict(task_id="collector_task_7", buffer_id="b", policy_id="p", n_sample=2), **kw})


def _collect_answer(**kw):
    base = {"metadata": [{"data_id": "collector_task_7_0", "collect_iter": 3}], "envstep": 5, "eval_flag": False}
    return {**base, **kw}


def test_every_record_round_trips():
    task = _collect_task(collect_setting={"eps": 0.5})
    assert pp.decode_task(pp.TaskName.COLLECTOR_DATA.value, task.to_json()) == task
    ev = pp.EvalTask(task_id="collector_task_8", buffer_id="b", policy_id="p", best_return=None)
    assert pp.decode_task("collector_data_task", ev.to_json()) == ev
    result = pp.decode_result(task, _collect_answer(), "collector 'c0'")
    assert isinstance(result, pp.CollectResult) and result.sample_count == 1
    assert result.metadata[0].to_json() == {"data_id": "collector_task_7_0", "collect_iter": 3}  # no priority: absent
    learn = pp.LearnTask.of_batches([[{"data_id": "a", "IS": 1.0}, {"data_id": "b", "IS": 0.5}]], envstep=3,
                                    wait_s=1.0)
    assert pp.LearnTask.from_json(learn.to_json()).batches() == [[{"data_id": "a", "IS": 1.0},
                                                                  {"data_id": "b", "IS": 0.5}]]
    info = pp.LearnInfo(learner_step=4, priority_info=pp.PriorityInfo([1], [2], [0.5]))
    answer = pp.LearnResult(infos=[info], trained=1)
    assert pp.decode_result(learn, answer.to_json(), "learner") == answer
    state = pp.CommanderState(envstep=3, eval_history=[pp.EvalRecord(1, 2, 3.0)], last_eval=pp.EvalRecord(1, 2, 3.0))
    assert pp.CommanderState.from_json(state.to_json()) == state
    assert state["envstep"] == 3 and pp.TaskName("learner_learn_task") is pp.TaskName.LEARNER_LEARN


@pytest.mark.parametrize("answer, field, problem", [
    ({"envstep": 5}, "metadata", "is missing"),
    (_collect_answer(envstep="5"), "envstep", "must be an int"),
    (_collect_answer(envstep=True), "envstep", "must be an int"),
    (_collect_answer(duration=math.nan), "duration", "finite"),
    (_collect_answer(duration=math.inf), "duration", "finite"),
    (_collect_answer(metadata=[{"data_id": "../x"}]), "metadata[0].data_id", "plain file name"),
    (_collect_answer(metadata=[{"data_id": "collector_task_7_0/../../x"}]), "metadata[0].data_id", "plain file name"),
    (_collect_answer(metadata=[{"data_id": "collector_task_99_0"}]), "metadata[0].data_id", "not a data file of task"),
    (_collect_answer(metadata=[{"data_id": 3}]), "metadata[0].data_id", "must be a str"),
    (_collect_answer(metadata=[{"data_id": "collector_task_7_0", "priority": "high"}]), "metadata[0].priority",
     "must be a number"),
    (_collect_answer(metadata="all of them"), "metadata", "must be a list"),
    (_collect_answer(eval_flag=True), "eval_flag", "must be false"),
    (_collect_answer(envstep=-1), "envstep", ">= 0"),
    ([1, 2], "(message)", "JSON object"),
])
def test_malformed_collect_answers_name_the_field(answer, field, problem):
    with pytest.raises(pp.ProtocolError) as info:
        pp.decode_result(_collect_task(), answer, "collector 'c0' at 127.0.0.1:1")
    err = info.value
    assert isinstance(err, DingError) and err.field == field and problem in str(err)
    assert "collector 'c0' at 127.0.0.1:1" in str(err) and "CollectResult" in str(err)


@pytest.mark.parametrize("record, data, field", [
    (pp.EvalResult, {"policy_iter": 1, "eval_return_mean": "high"}, "eval_return_mean"),
    (pp.EvalResult, {"policy_iter": 1, "eval_return_mean": None}, "eval_return_mean"),
    (pp.EvalResult, {"policy_iter": 1, "eval_return_mean": math.nan}, "eval_return_mean"),
    (pp.EvalResult, {"policy_iter": 1.5, "eval_return_mean": 1.0}, "policy_iter"),
    (pp.LearnResult, {"infos": [{"learner_step": "3"}]}, "infos[0].learner_step"),
    (pp.LearnResult, {"infos": [{"learner_step": 3, "priority_info": {"replay_unique_id": [1], "replay_buffer_idx": [1],
                                                                      "priority": [math.nan]}}]},
     "infos[0].priority_info.priority[0]"),
    (pp.LearnResult, {"infos": [{"learner_step": 3, "priority_info": {"replay_unique_id": [1, 2],
                                                                      "replay_buffer_idx": [1], "priority": [1.0]}}]},
     "replay_unique_id"),
    (pp.LearnerStarted, {"learner_step": 0}, "policy_iter"),
    (pp.DemandAnswer, {"demand": {"batch_size": 0}}, "batch_size"),
    (pp.LearnTask, {"data": [{"data_id": ["a", "../b"]}]}, "data[0].data_id[1]"),
    (pp.LearnTask, {"data": [{"data_id": ["a"], "IS": [1.0, 2.0]}]}, "data[0]"),
    (pp.LearnTask, {"data": [{"IS": [1.0]}]}, "data[0].data_id"),
    (pp.CollectTask, {"task_id": "t", "buffer_id": "b", "policy_id": "p", "n_sample": 0}, "n_sample"),
])
def test_malformed_records_name_the_field(record, data, field):
    with pytest.raises(pp.ProtocolError) as info:
        record.from_json(data, "peer x")
    assert info.value.field.endswith(field), str(info.value)
    assert info.value.record.startswith(record.__name__)


def test_unknown_task_names_are_protocol_errors():
    with pytest.raises(pp.ProtocolError, match="no task of parallel mode"):
        pp.decode_task("format_disk_task", {})


def _payload_keys() -> set[str]:
    keys = set()
    for cls in pp.WIRE_RECORDS:
        keys.update(f.name for f in dataclasses.fields(cls))
    return keys


def _string_literals(path: str) -> list[tuple[int, str]]:
    tree = ast.parse(open(os.path.join(ROOT, path)).read())
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and n.body
                  and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
    return [(n.lineno, n.value) for n in ast.walk(tree)
            if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings]


def test_no_task_name_or_payload_key_is_spelled_outside_the_protocol_module():
    names = {t.value for t in pp.TaskName}
    keys = _payload_keys()
    assert {"task_id", "buffer_id", "eval_flag", "data_id", "eval_return_mean", "metadata"} <= keys
    found = []
    for path in PARALLEL_MODULES:
        for line, value in _string_literals(path):
            if (value in names or value in keys) and (path, value) not in ALLOWED:
                found.append(f"{path}:{line}: {value!r}")
    assert not found, ("task names and payload keys belong to ding/parallel/protocol.py (use its records "
                       "and TaskName):\n" + "\n".join(found))
    for path, literal in ALLOWED:  # the allowance is still needed (or it goes)
        assert any(v == literal for _, v in _string_literals(path)), (path, literal)


def test_the_scan_finds_a_payload_key(tmp_path):
    """The scan above would see a literal key (so its passing means something)."""
    src = tmp_path / "m.py"
    src.write_text('"""doc: task_id"""\ndef f(task):\n    return task["task_id"]\n')
    rel = os.path.relpath(str(src), ROOT)
    assert (3, "task_id") in _string_literals(rel)


def test_docs_protocol_table_is_the_modules():
    text = open(os.path.join(ROOT, "docs", "parallel.md")).read()
    begin, end = "<!-- protocol-table: begin -->\n", "<!-- protocol-table: end -->"
    assert begin in text and end in text
    table = text.split(begin, 1)[1].split(end, 1)[0]
    assert table == pp.protocol_table(), "regenerate the table: python -c 'from ding.parallel.protocol " \
                                         "import protocol_table; print(protocol_table())'"
