"""JsonRecord: annotations checked field by field, one ProtocolError naming the record, the field and the peer."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

import pytest

from ding.utils import DingError, JsonRecord, ProtocolError
from ding.utils.json_record import fields_doc


@dataclass
class Inner(JsonRecord):
    n: int

    def _validate(self, peer: str, context: Any) -> None:
        if self.n < 0:
            raise self._bad("n", "must be >= 0", peer)


@dataclass
class Outer(JsonRecord):
    name: str
    ratio: float
    inner: Inner
    items: list[Inner] = field(default_factory=list)
    table: dict[str, float] = field(default_factory=dict)
    maybe: float | None = None
    flag: bool = False
    blob: Any = None
    ids: list[int] = field(default_factory=list)
    weights: list[float] = field(default_factory=list)
    names: list[str] = field(default_factory=list)


def test_round_trip_and_ints_become_floats():
    rec = Outer.from_json({"name": "a", "ratio": 1, "inner": {"n": 2}, "items": [{"n": 3}], "table": {"x": 2},
                           "unknown": "ignored", "blob": {"deep": [1, [2]]}})
    assert rec.ratio == 1.0 and isinstance(rec.ratio, float) and rec.items == [Inner(3)] and rec.table == {"x": 2.0}
    assert Outer.from_json(rec.to_json()) == rec and rec["name"] == "a"
    with pytest.raises(KeyError):
        rec["unknown"]
    assert fields_doc(Outer).startswith("`name`, `ratio`, `inner`, `items`?")


@pytest.mark.parametrize("data, where, problem", [
    ({"ratio": 1.0, "inner": {"n": 1}}, "name", "is missing"),
    ({"name": 3, "ratio": 1.0, "inner": {"n": 1}}, "name", "must be a str"),
    ({"name": "a", "ratio": "1", "inner": {"n": 1}}, "ratio", "must be a number"),
    ({"name": "a", "ratio": True, "inner": {"n": 1}}, "ratio", "must be a number"),
    ({"name": "a", "ratio": math.inf, "inner": {"n": 1}}, "ratio", "finite"),
    ({"name": "a", "ratio": 1.0, "inner": {"n": 1.5}}, "inner.n", "must be an int"),
    ({"name": "a", "ratio": 1.0, "inner": {"n": -1}}, "inner.n", ">= 0"),
    ({"name": "a", "ratio": 1.0, "inner": [1]}, "inner", "JSON object"),
    ({"name": "a", "ratio": 1.0, "inner": {"n": 1}, "items": [{"n": 1}, {}]}, "items[1].n", "is missing"),
    ({"name": "a", "ratio": 1.0, "inner": {"n": 1}, "table": {"x": math.nan}}, "table.x", "finite"),
    ({"name": "a", "ratio": 1.0, "inner": {"n": 1}, "maybe": "no"}, "maybe", "must be a number"),
    ({"name": "a", "ratio": 1.0, "inner": {"n": 1}, "flag": 1}, "flag", "must be a bool"),
    # lists of scalars are checked in one pass; a bad element is still named
    ({"name": "a", "ratio": 1.0, "inner": {"n": 1}, "ids": [1, 2, True]}, "ids[2]", "must be an int"),
    ({"name": "a", "ratio": 1.0, "inner": {"n": 1}, "ids": [1, 2.0]}, "ids[1]", "must be an int"),
    ({"name": "a", "ratio": 1.0, "inner": {"n": 1}, "weights": [0.5, math.nan]}, "weights[1]", "finite"),
    ({"name": "a", "ratio": 1.0, "inner": {"n": 1}, "weights": [0.5, "1"]}, "weights[1]", "must be a number"),
    ({"name": "a", "ratio": 1.0, "inner": {"n": 1}, "names": ["x", None]}, "names[1]", "must be a str"),
])
def test_each_problem_is_one_error_naming_the_field(data, where, problem):
    with pytest.raises(ProtocolError) as info:
        Outer.from_json(data, peer="peer p")
    err = info.value
    assert isinstance(err, DingError) and err.record == "Outer" and err.field == where and err.peer == "peer p"
    assert problem in str(err) and f"'{where}'" in str(err)


def test_lists_of_scalars_pass_in_one_pass_with_ints_made_floats():
    rec = Outer.from_json({"name": "a", "ratio": 1.0, "inner": {"n": 1}, "ids": [3, 4], "weights": [1, 0.5],
                           "names": ["x"]})
    assert rec.ids == [3, 4] and rec.weights == [1.0, 0.5] and all(type(w) is float for w in rec.weights)
    back = rec.to_json()
    assert back["weights"] == [1.0, 0.5] and back["weights"] is not rec.weights  # to_json copies


def test_not_an_object():
    with pytest.raises(ProtocolError, match="must be a JSON object"):
        Outer.from_json([1, 2], peer="p")
