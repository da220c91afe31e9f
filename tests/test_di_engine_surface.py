"""Every public name issue #39 added for DI-engine's users, imported from its DI-engine path, with DI-engine 0.5.3's
signature: each parameter of DI-engine's (read from the 0.5.3 wheel's source, never imported) is accepted by ding's
under the same name, at the same position when positional, and optional when DI-engine's is."""
from __future__ import annotations

import ast
import importlib
import inspect
import zipfile

import pytest

from tests.di_engine_files import di_engine_wheel

# (ding import path, name, file in the wheel, DI-engine's qualified name there, methods to compare besides __init__)
SURFACE = [
    ("ding.utils", "Scheduler", "ding/utils/scheduler_helper.py", "Scheduler", ("step", "update_param", "is_better")),
    ("ding.utils", "lists_to_dicts", "ding/utils/default_helper.py", "lists_to_dicts", ()),
    ("ding.utils", "dicts_to_lists", "ding/utils/default_helper.py", "dicts_to_lists", ()),
    ("ding.utils", "deep_merge_dicts", "ding/utils/default_helper.py", "deep_merge_dicts", ()),
    ("ding.utils", "save_file", "ding/utils/file_helper.py", "save_file", ()),
    ("ding.utils", "read_file", "ding/utils/file_helper.py", "read_file", ()),
    ("ding.utils", "remove_file", "ding/utils/file_helper.py", "remove_file", ()),
    ("ding.utils", "LockContext", "ding/utils/lock_helper.py", "LockContext", ("acquire", "release")),
    ("ding.utils.data", "diff_shape_collate", "ding/utils/data/collate_fn.py", "diff_shape_collate", ()),
    ("ding.utils.data", "default_decollate", "ding/utils/data/collate_fn.py", "default_decollate", ()),
    ("ding.utils.data", "timestep_collate", "ding/utils/data/collate_fn.py", "timestep_collate", ()),
    ("ding.rl_utils", "get_train_sample", "ding/rl_utils/adder.py", "Adder.get_train_sample", ()),
    ("ding.rl_utils", "get_gae", "ding/rl_utils/adder.py", "Adder.get_gae", ()),
    ("ding.rl_utils", "get_gae_with_default_last_value", "ding/rl_utils/adder.py",
     "Adder.get_gae_with_default_last_value", ()),
    *(("ding.envs.env", n, "ding/envs/env/env_implementation_check.py", n, ()) for n in (
        "check_all", "check_array_space", "check_different_memory", "check_obs_deepcopy", "check_reset",
        "check_space_dtype", "check_step", "demonstrate_correct_procedure")),
    ("ding.utils", "SumSegmentTree", "ding/utils/segment_tree.py", "SumSegmentTree", ("find_prefixsum_idx",)),
    ("ding.utils", "MinSegmentTree", "ding/utils/segment_tree.py", "MinSegmentTree", ()),
    ("ding.config", "read_config_directly", "ding/config/config.py", "read_config_directly", ()),
    ("ding.torch_utils", "to_list", "ding/torch_utils/data_helper.py", "to_list", ()),
    ("ding.torch_utils", "tensor_to_list", "ding/torch_utils/data_helper.py", "tensor_to_list", ()),
    ("ding.torch_utils", "to_item", "ding/torch_utils/data_helper.py", "to_item", ()),
    ("ding.torch_utils", "same_shape", "ding/torch_utils/data_helper.py", "same_shape", ()),
    ("ding.torch_utils", "get_tensor_data", "ding/torch_utils/data_helper.py", "get_tensor_data", ()),
    ("ding.torch_utils", "get_null_data", "ding/torch_utils/data_helper.py", "get_null_data", ()),
    ("ding.torch_utils", "is_differentiable", "ding/torch_utils/nn_test_helper.py", "is_differentiable", ()),
    ("ding.torch_utils", "calculate_grad_norm", "ding/torch_utils/optimizer_helper.py", "calculate_grad_norm", ()),
    ("ding.rl_utils", "td_lambda_error", "ding/rl_utils/td.py", "td_lambda_error", ()),
    ("ding.rl_utils.td", "generalized_lambda_returns", "ding/rl_utils/td.py", "generalized_lambda_returns", ()),
    ("ding.rl_utils", "create_noise_generator", "ding/rl_utils/exploration.py", "create_noise_generator", ()),
    ("ding.rl_utils.ppo", "shape_fn_ppo", "ding/rl_utils/ppo.py", "shape_fn_ppo", ()),
    ("ding.rl_utils.value_rescale", "symlog", "ding/rl_utils/value_rescale.py", "symlog", ()),
    ("ding.rl_utils.value_rescale", "inv_symlog", "ding/rl_utils/value_rescale.py", "inv_symlog", ()),
    ("ding.league", "get_elo", "ding/league/metric.py", "EloCalculator.get_new_rating", ()),
    ("ding.league", "get_elo_array", "ding/league/metric.py", "EloCalculator.get_new_rating_array", ()),
    ("ding.league.metric", "LeagueMetricEnv", "ding/league/metric.py", "LeagueMetricEnv",
     ("create_rating", "rate_1vs1", "rate_1vsC")),
    ("ding.league.shared_payoff", "BattleRecordDict", "ding/league/shared_payoff.py", "BattleRecordDict", ()),
    ("ding.interaction.base", "success_response", "ding/interaction/base/app.py", "success_response", ()),
    ("ding.interaction.base", "failure_response", "ding/interaction/base/app.py", "failure_response", ()),
    ("ding.interaction", "TaskFail", "ding/interaction/slave/action.py", "TaskFail", ()),
    ("ding.interaction.base", "responsible", "ding/interaction/base/app.py", "responsible", ()),
    ("ding.interaction.base", "random_token", "ding/interaction/base/common.py", "random_token", ()),
    ("ding.interaction.base", "translate_dict_func", "ding/interaction/base/common.py", "translate_dict_func", ()),
    ("ding.interaction.base", "default_func", "ding/interaction/base/common.py", "default_func", ()),
    ("ding.interaction.base", "DblEvent", "ding/interaction/base/threading.py", "DblEvent",
     ("wait_for_open", "wait_for_close", "open", "close", "is_open", "is_close")),
    ("ding.utils.log_helper", "pretty_print", "ding/utils/log_helper.py", "pretty_print", ()),
    ("ding.utils.log_helper", "build_logger", "ding/utils/log_helper.py", "build_logger", ()),
    ("ding.utils.data", "offline_data_save_type", "ding/utils/data/dataset.py", "offline_data_save_type", ()),
    ("ding.interaction.base", "split_http_address", "ding/interaction/base/network.py", "split_http_address", ()),
    ("ding.interaction.base", "HttpEngine", "ding/interaction/base/network.py", "HttpEngine", ("request", "get_url")),
    ("ding.interaction.base", "get_http_engine_class", "ding/interaction/base/network.py", "get_http_engine_class",
     ()),
    ("ding.interaction.exception", "ResponseException", "ding/interaction/exception/base.py", "ResponseException", ()),
    ("ding.interaction.exception.master", "get_master_exception_by_error", "ding/interaction/exception/master.py",
     "get_master_exception_by_error", ()),
    ("ding.interaction.exception.slave", "get_slave_exception_by_error", "ding/interaction/exception/slave.py",
     "get_slave_exception_by_error", ()),
    ("ding.model", "StochasticDuelingHead", "ding/model/common/head.py", "StochasticDuelingHead", ("forward",)),
    ("ding.model", "EnsembleHead", "ding/model/common/head.py", "EnsembleHead", ("forward",)),
    ("ding.model", "IMPALAConvEncoder", "ding/model/common/encoder.py", "IMPALAConvEncoder", ()),
    ("ding.model", "GaussianFourierProjectionTimeEncoder", "ding/model/common/encoder.py",
     "GaussianFourierProjectionTimeEncoder", ()),
    ("ding.model", "FCEncoder", "ding/model/common/encoder.py", "FCEncoder", ()),
    ("ding.model.template.mavac", "MAVAC", "ding/model/template/mavac.py", "MAVAC", ()),
    ("ding.worker.collector.base_serial_collector", "CachePool", "ding/worker/collector/base_serial_collector.py",
     "CachePool", ("update", "reset")),
    ("ding.worker.collector.base_serial_collector", "TrajBuffer", "ding/worker/collector/base_serial_collector.py",
     "TrajBuffer", ("append",)),
    ("ding.worker.collector.base_serial_collector", "to_tensor_transitions",
     "ding/worker/collector/base_serial_collector.py", "to_tensor_transitions", ()),
    ("ding.entry.utils", "random_collect", "ding/entry/utils.py", "random_collect", ()),
    ("ding.entry.utils", "mark_not_expert", "ding/entry/utils.py", "mark_not_expert", ()),
    ("ding.entry.utils", "mark_warm_up", "ding/entry/utils.py", "mark_warm_up", ()),
]
NAMEDTUPLES = [("ding.rl_utils", "td_lambda_data", "ding/rl_utils/td.py")]


@pytest.fixture(scope="module")
def wheel():
    with zipfile.ZipFile(di_engine_wheel()) as zf:
        yield {name: zf.read(name).decode() for name in zf.namelist() if name.startswith("ding/")}


def _find(tree: ast.AST, qualname: str) -> ast.AST:
    node = tree
    for part in qualname.split("."):
        node = next(n for n in ast.iter_child_nodes(node)
                    if isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == part)
    return node


def _params(fn: ast.FunctionDef) -> tuple[list[tuple[str, bool]], list[tuple[str, bool]], bool]:
    """(positional [(name, has_default)], keyword-only [(name, has_default)], takes **kwargs), self/cls left out."""
    a = fn.args
    pos = a.posonlyargs + a.args
    defaults = [False] * (len(pos) - len(a.defaults)) + [True] * len(a.defaults)
    positional = [(p.arg, d) for p, d in zip(pos, defaults) if p.arg not in ("self", "cls")]
    kwonly = [(p.arg, d is not None) for p, d in zip(a.kwonlyargs, a.kw_defaults)]
    return positional, kwonly, a.kwarg is not None or a.vararg is not None


def _check(theirs: ast.FunctionDef, ours: object, what: str) -> list[str]:
    sig = inspect.signature(ours)
    params = [p for p in sig.parameters.values() if p.name not in ("self", "cls")]
    ours_pos = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    by_name = {p.name: p for p in params}
    ours_var_kw = any(p.kind is p.VAR_KEYWORD for p in params)
    positional, kwonly, _ = _params(theirs)
    problems = []
    for i, (name, has_default) in enumerate(positional):
        if i >= len(ours_pos) or ours_pos[i].name != name:
            if not (ours_var_kw and any(p.kind is p.VAR_POSITIONAL for p in params)):
                problems.append(f"{what}: DI-engine's positional parameter {i} is {name!r}, ding's is "
                                f"{ours_pos[i].name if i < len(ours_pos) else 'missing'!r}")
            continue
        if has_default and ours_pos[i].default is inspect.Parameter.empty:
            problems.append(f"{what}: {name!r} is optional in DI-engine, required in ding")
    for name, has_default in kwonly:
        if name not in by_name and not ours_var_kw:
            problems.append(f"{what}: keyword {name!r} of DI-engine's is not accepted")
        elif name in by_name and has_default and by_name[name].default is inspect.Parameter.empty:
            problems.append(f"{what}: {name!r} is optional in DI-engine, required in ding")
    return problems


@pytest.mark.parametrize("module,name,wheel_file,qualname,methods", SURFACE, ids=[f"{m}.{n}" for m, n, *_ in SURFACE])
def test_name_has_di_engine_signature(wheel, module, name, wheel_file, qualname, methods):
    if name == "LeagueMetricEnv":
        pytest.importorskip("trueskill", reason="LeagueMetricEnv needs the league extra")
    ours = getattr(importlib.import_module(module), name)
    node = _find(ast.parse(wheel[wheel_file]), qualname)
    problems = []
    if isinstance(node, ast.ClassDef):
        assert inspect.isclass(ours), f"{module}.{name} is a class in DI-engine"
        for method in ("__init__", *methods):
            theirs = next((n for n in node.body if isinstance(n, ast.FunctionDef) and n.name == method), None)
            if theirs is not None:
                problems += _check(theirs, getattr(ours, method), f"{name}.{method}")
            else:
                assert method == "__init__", f"{qualname}.{method} not in the wheel"
    else:
        problems += _check(node, ours, f"{module}.{name}")
    assert not problems, problems


@pytest.mark.parametrize("module,name,wheel_file", NAMEDTUPLES)
def test_namedtuple_has_di_engine_fields(wheel, module, name, wheel_file):
    ours = getattr(importlib.import_module(module), name)
    for node in ast.walk(ast.parse(wheel[wheel_file])):
        if (isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name) and node.targets[0].id == name
                and isinstance(node.value, ast.Call)):
            fields = [e.value for e in node.value.args[1].elts]
            assert list(ours._fields) == fields
            return
    raise AssertionError(f"{name} not found in {wheel_file}")
