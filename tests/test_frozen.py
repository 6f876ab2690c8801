from kueue_provreq.api.frozen import FrozenMap, freeze, thaw
from kueue_provreq.api.model import is_model


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


def test_models_refuse_changes_in_place_under_the_guard_the_tests_run_with() -> None:
    """The models are not frozen classes (``kueue_provreq.api.immutable``); the suite runs with
    their fields guarded, so changing one in place fails as on a frozen class, while building,
    evolving and hashing them works as before."""
    import attrs
    import pytest
    from kueue_provreq.api.evolve import evolve
    from kueue_provreq.api.meta import ObjectMeta
    from kueue_provreq.api.workload import Workload, WorkloadStatus
    from kueue_provreq.world import Update

    wl = Workload(ObjectMeta(name="a", namespace="ns"))
    for obj, field, value in ((wl, "status", WorkloadStatus()), (wl.metadata, "name", "b"),
                              (Update(wl), "obj", wl)):
        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            setattr(obj, field, value)
    renamed = evolve(wl, metadata=evolve(wl.metadata, name="b"))
    assert (wl.metadata.name, renamed.metadata.name) == ("a", "b")
    assert hash(wl) == hash(Workload(ObjectMeta(name="a", namespace="ns"))) and hash(wl) == hash(wl)
    assert renamed != wl and len({wl, renamed, Workload(ObjectMeta(name="a", namespace="ns"))}) == 2


def test_models_have_no_weak_reference_slot() -> None:
    """A settled world holds some 25 model objects per workload, and nothing takes a weak
    reference to one: each declares ``weakref_slot=False`` (``kueue_provreq.api.immutable``),
    which attrs would otherwise add, 8 bytes an object."""
    import importlib
    import pkgutil

    import kueue_provreq.api

    models = [cls for m in pkgutil.iter_modules(kueue_provreq.api.__path__)
              for cls in vars(importlib.import_module(f"kueue_provreq.api.{m.name}")).values()
              if isinstance(cls, type) and is_model(cls) and cls.__module__ == f"kueue_provreq.api.{m.name}"]
    assert len(models) >= 60
    assert [cls.__name__ for cls in models if hasattr(cls, "__weakref__")] == []
