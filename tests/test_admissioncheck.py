"""The provisioning AdmissionCheck reconciler: the Active condition and its BadParametersRef texts."""

from __future__ import annotations

import pytest
from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.meta import Condition, ObjectMeta, Time
from kueue_provreq.api.provisioning import ProvisioningRequestConfig
from kueue_provreq.api.queues import (
    AdmissionCheck,
    AdmissionCheckSpec,
    AdmissionCheckStatus,
    ParametersReference,
)
from kueue_provreq.controllers import admissioncheck
from kueue_provreq.controllers.context import Context
from kueue_provreq.world import NOTHING, Fault, Update, World

from builders import T0

GOOD = ParametersReference(c.KUEUE_GROUP, c.PROVISIONING_REQUEST_CONFIG, "prc")
KEY = (c.ADMISSION_CHECK, "", "check")


def check(parameters: ParametersReference | None = GOOD, controller: str = c.PROVISIONING_REQUEST_CONTROLLER_NAME,
          conditions: tuple[Condition, ...] = ()) -> AdmissionCheck:
    return AdmissionCheck(ObjectMeta(name="check", uid="ac", generation=3),
                          AdmissionCheckSpec(controller, parameters), AdmissionCheckStatus(conditions))


def prc() -> ProvisioningRequestConfig:
    return ProvisioningRequestConfig(ObjectMeta(name="prc", uid="prc"))


def reconcile(world: World, now: int = 0) -> Condition | None:
    result = admissioncheck.reconcile(world, KEY, Context(Time(T0 + now)))
    assert result.error is None
    for effect in result.effects:
        world.apply(effect)
    ac = world.get(*KEY)
    assert isinstance(ac, AdmissionCheck)
    return ac.status.conditions[0] if ac.status.conditions else None


def test_valid_reference_to_existing_config_is_active() -> None:
    assert reconcile(World([check(), prc()])) == Condition(
        c.ADMISSION_CHECK_ACTIVE, c.TRUE, "Active", "The admission check is active", T0, 3)


@pytest.mark.parametrize(("ref", "message"), [
    (None, "missing parameters reference"),
    (ParametersReference(c.KUEUE_GROUP, c.PROVISIONING_REQUEST_CONFIG, ""), "empty name: bad parameters reference"),
    (ParametersReference("kueue.x-k8s.io/v1beta1", c.PROVISIONING_REQUEST_CONFIG, "prc"),
     'wrong group "kueue.x-k8s.io/v1beta1", expecting "kueue.x-k8s.io": bad parameters reference'),
    (ParametersReference(c.KUEUE_GROUP, "Config", "prc"),
     'wrong kind "Config", expecting "ProvisioningRequestConfig": bad parameters reference'),
    (ParametersReference(c.KUEUE_GROUP, c.PROVISIONING_REQUEST_CONFIG, "other"),
     'ProvisioningRequestConfig.kueue.x-k8s.io "other" not found'),
])
def test_bad_reference_is_inactive_with_the_reference_error(ref: ParametersReference | None, message: str) -> None:
    assert reconcile(World([check(ref), prc()])) == Condition(
        c.ADMISSION_CHECK_ACTIVE, c.FALSE, "BadParametersRef", message, T0, 3)


def test_only_a_status_flip_updates_the_condition() -> None:
    world = World([check(None), prc()])
    first = reconcile(world)
    ac = world.get(*KEY)
    assert isinstance(ac, AdmissionCheck)
    world.put(evolve(ac, spec=evolve(ac.spec, parameters=evolve(GOOD, kind="Other")),
                           metadata=evolve(ac.metadata, generation=4)))
    assert admissioncheck.reconcile(world, KEY, Context(Time(T0 + 5))) is NOTHING
    assert reconcile(world, 5) == first
    ac = world.get(*KEY)
    assert isinstance(ac, AdmissionCheck)
    world.put(evolve(ac, spec=evolve(ac.spec, parameters=GOOD)))
    assert reconcile(world, 9) == Condition(c.ADMISSION_CHECK_ACTIVE, c.TRUE, "Active",
                                            "The admission check is active", Time(T0 + 9), 4)


def test_checks_of_other_controllers_and_missing_checks_are_ignored() -> None:
    assert admissioncheck.reconcile(World([check(None, "example.com/other")]), KEY, Context(T0)) is NOTHING
    assert admissioncheck.reconcile(World([]), KEY, Context(T0)) is NOTHING


def test_config_missing_from_the_cache_reads_as_not_found() -> None:
    world = World([check(), prc()], faults=(Fault("get", c.PROVISIONING_REQUEST_CONFIG, "", cached=False),))
    result = admissioncheck.reconcile(world, KEY, Context(T0))
    (update,) = result.effects
    assert isinstance(update, Update) and isinstance(update.obj, AdmissionCheck)
    assert update.obj.status.conditions[0].message == 'ProvisioningRequestConfig.kueue.x-k8s.io "prc" not found'


def test_failed_status_write_is_reported() -> None:
    world = World([check(None)], faults=(Fault("update", c.ADMISSION_CHECK, "conflict"),))
    assert admissioncheck.reconcile(world, KEY, Context(T0)).error == "conflict"
