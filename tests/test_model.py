"""The hand-written model classes (kueue_provreq.api.model) behave as the attrs classes they replace."""

from __future__ import annotations

import copy
import importlib
import inspect
import pickle
import pkgutil
import typing
from typing import Any

import attrs
import kueue_provreq.api
import pytest
from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Condition, ObjectMeta, OwnerReference, Time
from kueue_provreq.api.model import HASH_SLOT, NOTHING, fields, is_model


def _hand_written() -> list[type]:
    found = []
    for info in pkgutil.iter_modules(kueue_provreq.api.__path__):
        module = importlib.import_module(f"kueue_provreq.api.{info.name}")
        found += [cls for cls in vars(module).values()
                  if isinstance(cls, type) and cls.__module__ == module.__name__ and "FIELDS" in vars(cls)]
    return found


HAND_WRITTEN = _hand_written()


def test_the_hot_models_are_hand_written() -> None:
    assert {OwnerReference, ObjectMeta, Condition} <= set(HAND_WRITTEN)
    assert not any(attrs.has(cls) for cls in HAND_WRITTEN)


@pytest.mark.parametrize("cls", HAND_WRITTEN, ids=lambda cls: cls.__name__)
def test_a_models_init_slots_and_types_follow_its_declared_fields(cls: type) -> None:
    declared = fields(cls)
    params = list(inspect.signature(cls).parameters.values())
    private = [p for p in params if p.kind is p.KEYWORD_ONLY]  # how a class builds itself faster
    assert all(p.name.startswith("_") and p.default is None for p in private)
    params = [p for p in params if p not in private]
    assert [p.name for p in params] == [f.name for f in declared]
    assert [p.default if p.default is not p.empty else NOTHING for p in params] == [f.default for f in declared]
    hints = typing.get_type_hints(cls.__init__)
    assert [hints[f.name] for f in declared] == [f.type for f in declared]
    own = [name for name in cls.__slots__ if name not in {f.name for f in declared}]  # type: ignore[attr-defined]
    assert list(cls.__slots__)[:len(declared)] == [f.name for f in declared]  # type: ignore[attr-defined]
    assert HASH_SLOT not in own or own.index(HASH_SLOT) == 0
    assert is_model(cls) and typing.get_type_hints(cls.__init__)["return"] is type(None)


def _condition() -> Condition:
    return Condition(c.WORKLOAD_ADMITTED, c.TRUE, "Admitted", "The workload is admitted", Time(7), 2)


def _meta() -> ObjectMeta:
    return ObjectMeta("wl", "default", "uid-1", 2, Time(1), FrozenMap({"a": "b"}),
                      owner_references=(OwnerReference("batch/v1", "Job", "job", "u", True),),
                      finalizers=("f",))


@pytest.mark.parametrize(("make", "change"), [(_condition, {"reason": "Other"}), (_meta, {"uid": "other"})],
                         ids=["Condition", "ObjectMeta"])
def test_a_model_is_a_value_that_copies_pickles_and_evolves(make: Any, change: dict[str, str]) -> None:
    a, b = make(), make()
    assert a == b and hash(a) == hash(b) and a is not b
    assert (a != b) is False  # the __ne__ Python derives from __eq__
    assert a != evolve(a, **change) and evolve(evolve(a, **change), **{k: getattr(a, k) for k in change}) == a
    for twin in (pickle.loads(pickle.dumps(a)), copy.deepcopy(a), copy.copy(a)):
        assert twin == a and hash(twin) == hash(a) and type(twin) is type(a)
    assert (a == "other") is False
    with pytest.raises(TypeError, match="has no field"):
        evolve(a, nonsense=1)


def test_a_models_repr_is_the_one_attrs_printed() -> None:
    assert repr(Condition("Ready", "True")) == ("Condition(type='Ready', status='True', reason='', message='', "
                                                "last_transition_time=None, observed_generation=None)")
    assert repr(OwnerReference("v1", "Pod", "p")) == ("OwnerReference(api_version='v1', kind='Pod', name='p', "
                                                      "uid='', controller=None, block_owner_deletion=None, "
                                                      "extra=FrozenMap({}))")


def test_evolve_changes_only_the_fields_named_and_rehashes() -> None:
    meta = _meta()
    hash(meta)
    moved = evolve(meta, generation=3)
    assert moved.generation == 3 and moved.name == meta.name and moved.labels is meta.labels
    assert moved != meta and hash(moved) == hash(ObjectMeta(**{f.name: getattr(moved, f.name)
                                                                for f in fields(ObjectMeta)}))


def test_the_immutable_guard_holds_for_hand_written_models() -> None:
    meta = _meta()
    hash(meta)  # the cache is written once more, and allowed
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        meta.name = "other"
    with pytest.raises(attrs.exceptions.FrozenInstanceError):
        _condition().status = c.FALSE
