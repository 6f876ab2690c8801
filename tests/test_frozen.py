from kueue_provreq.api.frozen import FrozenMap, freeze, thaw


def test_freeze_roundtrip_and_hash() -> None:
    data = {"a": [1, {"b": "c"}], "d": {}}
    frozen = freeze(data)
    assert isinstance(frozen, FrozenMap) and isinstance(frozen["a"], tuple)
    assert thaw(frozen) == data
    assert hash(frozen) == hash(freeze({"d": {}, "a": [1, {"b": "c"}]}))
    assert frozen == freeze(data) and frozen != data


def test_frozen_map_edits_return_new_maps() -> None:
    m = FrozenMap({"a": 1})
    assert m.set("b", 2) == {"a": 1, "b": 2} and m == {"a": 1}
    assert m.without("a") == {} and m.without("x") is m
    assert m.merged({"a": 3}) == {"a": 3}
