"""save_config / save_config_formatted: readable .py files that read_config loads back exactly."""
from __future__ import annotations

import math
import os
import string

import numpy as np
import pytest
import torch
from easydict import EasyDict
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ding.config import read_config, read_config_with_system, save_config, save_config_formatted
from ding.utils import ConfigError

TRICKY = dict(
    exp_name="it's a \"quoted\" name\nwith a newline and ünïcode",
    inf=float("inf"),
    neg_inf=-float("inf"),
    nan=float("nan"),
    tiny=1e-300,
    third=1 / 3,
    neg_zero=-0.0,
    big=2**70,
    flag=True,
    nothing=None,
    empty_dict={},
    empty_list=[],
    empty_tuple=(),
    one_tuple=(1,),
    shape=(4, 84, 84),
    mixed=[1, "a", None, (2.5, float("inf")), [dict(k=1)]],
    nested=dict(deeper=dict(deepest=dict(x=[dict(a=1), dict(b=(1, 2))]))),
    raw=b"\x00bytes",
    tags={"b", "a"},
    frozen=frozenset({3, 1}),
    **{"not an identifier": 1, "class": 2},
)


def same(a, b) -> bool:
    """Equality that treats nan as equal to nan and checks list/tuple/numpy types."""
    if isinstance(a, dict):
        return isinstance(b, dict) and list(a) == list(b) and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, np.ndarray):
        return (isinstance(b, np.ndarray) and a.dtype == b.dtype and a.shape == b.shape
                and np.array_equal(a, b, equal_nan=True))
    if isinstance(a, float) and math.isnan(a):
        return isinstance(b, float) and math.isnan(b)
    if isinstance(a, float):
        return type(b) is float and a == b and math.copysign(1, a) == math.copysign(1, b)
    return type(a) is type(b) and a == b


@pytest.mark.parametrize("writer", [save_config, save_config_formatted])
def test_tricky_values_round_trip_exactly(tmp_path, writer):
    path = str(tmp_path / "total_config.py")
    create = dict(env=dict(type="cartpole", import_names=["dizoo.x"]), policy=dict(type="dqn"))
    writer(EasyDict(TRICKY), path, create)
    main, loaded_create = read_config(path)
    assert same(dict(TRICKY), main)
    assert same(create, loaded_create)


def test_plain_file_is_readable_python_with_literals(tmp_path):
    path = tmp_path / "total_config.py"
    save_config(dict(a=float("inf"), b=dict(c="x")), str(path), dict(policy=dict(type="dqn")))
    text = path.read_text()
    assert "main_config = {\n    'a': float('inf'),\n    'b': {\n        'c': 'x',\n    },\n}" in text
    assert "create_config = {" in text
    assert "import" not in text.split("\n", 1)[1]  # nothing to import for plain values


def test_formatted_file_uses_easydict_dict_one_key_per_line(tmp_path):
    path = tmp_path / "formatted_total_config.py"
    save_config_formatted(dict(exp_name="e", env=dict(stop_value=195)), str(path), dict(env=dict(type="cartpole")))
    text = path.read_text()
    assert text.startswith("from easydict import EasyDict\n")
    assert "main_config = dict(\n    exp_name='e',\n    env=dict(\n        stop_value=195,\n    ),\n)" in text
    assert "main_config = EasyDict(main_config)" in text
    assert "create_config = EasyDict(create_config)" in text


def test_key_order_is_kept_and_output_is_deterministic(tmp_path):
    cfg = dict(z=1, a=dict(y=2, b=3), m=[dict(q=1, c=2)])
    save_config(cfg, str(tmp_path / "one.py"))
    save_config(dict(cfg), str(tmp_path / "two.py"))
    one = (tmp_path / "one.py").read_bytes()
    assert one == (tmp_path / "two.py").read_bytes()
    main, _ = read_config(str(tmp_path / "one.py"))
    assert list(main) == ["z", "a", "m"] and list(main.a) == ["y", "b"] and list(main.m[0]) == ["q", "c"]


def test_numpy_values_and_importable_classes_round_trip(tmp_path):
    cfg = dict(
        arr=np.arange(6, dtype=np.float32).reshape(2, 3),
        empty=np.zeros((0, 3), dtype=np.int64),
        scalar=np.float32(0.1),
        count=np.int64(7),
        activation=torch.nn.ReLU,
        fn=math.sqrt,
    )
    path = str(tmp_path / "cfg.py")
    save_config(cfg, path)
    main, _ = read_config(path)
    assert same(cfg["arr"], main.arr) and same(cfg["empty"], main.empty)
    assert type(main.scalar) is np.float32 and main.scalar == np.float32(0.1)
    assert type(main.count) is np.int64 and main.count == 7
    assert main.activation is torch.nn.ReLU and main.fn is math.sqrt


def test_an_instance_its_class_makes_without_arguments_round_trips(tmp_path):
    """DI-engine's pendulum PPO config has model.activation=nn.Tanh(): written as the class called with no
    arguments, read back as an equal module."""
    path = str(tmp_path / "cfg.py")
    save_config(dict(policy=dict(model=dict(activation=torch.nn.Tanh()))), path, dict(policy=dict(type="ppo")))
    activation = read_config(path)[0].policy.model.activation
    assert isinstance(activation, torch.nn.Tanh) and "torch.nn.modules.activation').Tanh()" in open(path).read()


def test_system_config_round_trips(tmp_path):
    path = str(tmp_path / "par.py")
    save_config(dict(a=1), path, dict(policy=dict(type="dqn")), system_cfg=dict(coordinator=dict(port=5)))
    assert read_config_with_system(path)[2] == dict(coordinator=dict(port=5))


def test_unsaveable_value_names_its_path(tmp_path):
    path = str(tmp_path / "cfg.py")
    with pytest.raises(ConfigError, match=r"policy\.model\.activation: cannot write a torch\.nn\..*LeakyReLU.*cfg\.py"):
        save_config(dict(policy=dict(model=dict(activation=torch.nn.LeakyReLU(0.1)))), path)
    assert not os.path.exists(path)
    with pytest.raises(ConfigError, match=r"^fn: .*lambda.* only classes and functions importable"):
        save_config(dict(fn=lambda x: x), path)


def test_non_string_key_and_cycle_are_rejected(tmp_path):
    with pytest.raises(ConfigError, match=r"a: config keys must be strings, got 1"):
        save_config(dict(a={1: "x"}), str(tmp_path / "k.py"))
    loop: dict = {}
    loop["self"] = loop
    with pytest.raises(ConfigError, match=r"self: the config refers to itself"):
        save_config(dict(loop=loop), str(tmp_path / "c.py"))


def test_non_dict_config_is_rejected(tmp_path):
    with pytest.raises(ConfigError, match=r"cannot save main_config to .*: expected a dict"):
        save_config([1], str(tmp_path / "x.py"))


def test_write_is_atomic_and_leaves_no_temp_files(tmp_path):
    path = tmp_path / "total_config.py"
    save_config(dict(a=1), str(path))
    with pytest.raises(ConfigError):
        save_config(dict(a=object()), str(path))
    assert read_config(str(path))[0] == {"a": 1}  # the failed save did not touch the old file
    assert sorted(os.listdir(tmp_path)) == ["total_config.py"]


_keys = st.text(alphabet=string.ascii_lowercase, min_size=1, max_size=6).map(lambda s: "k_" + s)
_leaves = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=10),
)
_values = st.recursive(
    _leaves,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.lists(inner, max_size=3).map(tuple), st.dictionaries(_keys, inner, max_size=3)
    ),
    max_leaves=10,
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(cfg=st.dictionaries(_keys, _values, max_size=5), formatted=st.booleans())
def test_any_plain_config_round_trips(tmp_path, cfg, formatted):
    path = str(tmp_path / "prop.py")
    (save_config_formatted if formatted else save_config)(cfg, path)
    main, _ = read_config(path)
    assert same(cfg, main)
