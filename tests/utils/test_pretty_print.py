"""ding.utils.log_helper.pretty_print, DI-engine's name: a dict as block YAML without its None values."""
import pytest
import yaml

from ding.utils.log_helper import pretty_print


def test_pretty_print_drops_none_and_gives_block_yaml(capsys):
    text = pretty_print({"lr": 0.001, "skip": None, "layers": [64, 32], "env": {"id": "CartPole-v1"}})
    assert yaml.safe_load(text) == {"lr": 0.001, "layers": [64, 32], "env": {"id": "CartPole-v1"}}
    assert "skip" not in text and "{" not in text  # block style, not flow style
    assert capsys.readouterr().out.strip() == text.strip()
    tricky = {"s": "a: b", "t": "true", "n": [{"x": 1, "y": [1, 2]}, []], "e": {}, "f": -1.5e-3, "b": False}
    assert yaml.safe_load(pretty_print(tricky, direct_print=False)) == tricky
    pretty_print({"a": 1}, direct_print=False)
    assert capsys.readouterr().out == ""


def test_pretty_print_bad_input_is_one_clear_error():
    with pytest.raises(TypeError, match="expected a dict"):
        pretty_print([1, 2])
    with pytest.raises(TypeError, match="JSON-serialisable"):
        pretty_print({"f": object()})
