"""The pure Cluster Autoscaler model: the SCRIPT grammar and what CA does to one request now."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kueue_provreq import autoscaler as ca
from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import Condition, ObjectMeta, Time
from kueue_provreq.api.provisioning import ProvisioningRequest, ProvisioningRequestSpec
from kueue_provreq.autoscaler import Answer, Decision, ScriptError, ScriptItem, parse_script
from kueue_provreq.machines import PROVISIONING_REQUEST_MACHINE
from kueue_provreq.machines.phases import provisioning_request_phase
from kueue_provreq.machines.requests import CA_REASONS, RequestTrigger, ca_writes

T0 = Time(1_704_067_200)


def request(name: str = "wl-prov-1", cls: str = c.CLASS_CHECK_CAPACITY, params: dict[str, str] | None = None,
            created: int = T0) -> ProvisioningRequest:
    return ProvisioningRequest(ObjectMeta(name=name, namespace="default", uid="pr", generation=1,
                                          creation_timestamp=Time(created)),
                               ProvisioningRequestSpec(cls, FrozenMap(params or {})))


def conditions(pr: ProvisioningRequest) -> dict[str, tuple[str, str]]:
    return {cd.type: (cd.status, cd.reason) for cd in pr.status.conditions}


# --- the grammar --------------------------------------------------------------------------------


def test_items_default_to_0s_and_the_last_repeats() -> None:
    script = parse_script("fail@1m,provision@5m")
    assert script.items == (ScriptItem("fail", 60), ScriptItem("provision", 300))
    assert [script.item(n).answer for n in (1, 2, 3, 9)] == ["fail", "provision", "provision", "provision"]
    assert parse_script("fail").item(3) == ScriptItem("fail", 0)
    assert parse_script(" expire@10m , revoke@2h").items == (ScriptItem("expire", 600), ScriptItem("revoke", 7200))
    assert str(parse_script("provision")) == "provision@0s"


@pytest.mark.parametrize(("text", "message"), [
    ("", "item 1 '': empty item"),
    ("provision,,fail", "item 2 '': empty item"),
    ("provison@5m", "unknown answer 'provison'"),
    ("fail@", "item 1 'fail@': invalid duration ''"),
    ("fail@5", "missing unit in duration '5'"),
    ("fail@-1m", "the delay must be a whole number of seconds, not negative"),
    ("fail@1.5s", "the delay must be a whole number of seconds"),
])
def test_bad_scripts_name_the_item(text: str, message: str) -> None:
    with pytest.raises(ScriptError, match="^item") as e:
        parse_script(text)
    assert message in str(e.value)
    assert "\n" not in str(e.value)


def test_the_attempt_is_read_off_the_request_name() -> None:
    assert ca.attempt_of(request("wl-prov-3")) == 3
    assert ca.attempt_of(request("a-very-long-name-hashed-b1c2d")) == 1


def test_revoke_is_a_provision_at_creation_then_a_revocation() -> None:
    assert ScriptItem("revoke", 3600).decision(T0) == Decision(Answer.PROVISION, T0, Time(T0 + 3600))
    assert parse_script("fail@1m").decision(request()) == Decision(Answer.FAIL, Time(T0 + 60))


# --- what CA does now --------------------------------------------------------------------------


def test_nothing_before_the_answer_is_due() -> None:
    done = ca.reconcile(request(), T0, Decision(Answer.PROVISION, Time(T0 + 300)))
    assert done.written == () and done.next_at == T0 + 300


def test_provision_writes_accepted_and_provisioned_then_books_for_10_minutes() -> None:
    done = ca.reconcile(request(), Time(T0 + 300), Decision(Answer.PROVISION, Time(T0 + 300)))
    assert conditions(done.request) == {c.PR_ACCEPTED: (c.TRUE, "Accepted"),
                                        c.PR_PROVISIONED: (c.TRUE, "CapacityIsFound")}
    assert all(cd.last_transition_time == T0 + 300 and cd.observed_generation == 1 for cd in done.written)
    assert done.next_at == T0 + 300 + ca.BOOKING_TIME
    expired = ca.reconcile(done.request, Time(T0 + 900), Decision(Answer.PROVISION, Time(T0 + 300)))
    assert conditions(expired.request)[c.PR_BOOKING_EXPIRED] == (c.TRUE, "CapacityReservationTimeExpired")
    assert expired.next_at is None


def test_scheduled_pods_consume_the_booking() -> None:
    done = ca.reconcile(request(cls=c.CLASS_BEST_EFFORT_ATOMIC), T0, Decision(Answer.PROVISION, T0),
                        pods_scheduled=True)
    assert conditions(done.request)[c.PR_PROVISIONED] == (c.TRUE, "CapacityIsProvisioned")
    assert conditions(done.request)[c.PR_BOOKING_EXPIRED] == (c.TRUE, "CapacityBookingConsumed")


def test_fail_and_expire() -> None:
    failed = ca.reconcile(request(), T0, Decision(Answer.FAIL, T0))
    assert provisioning_request_phase(failed.request) == c.PR_FAILED
    assert conditions(failed.request)[c.PR_FAILED] == (c.TRUE, "CapacityIsNotFound")
    expired = ca.reconcile(request(), T0, Decision(Answer.EXPIRE, T0))
    assert provisioning_request_phase(expired.request) == c.PR_BOOKING_EXPIRED
    assert set(conditions(expired.request)) == {c.PR_ACCEPTED, c.PR_PROVISIONED, c.PR_BOOKING_EXPIRED}


def test_a_revocation_comes_after_provisioning_even_once_the_booking_ended() -> None:
    decision = Decision(Answer.PROVISION, T0, Time(T0 + 3600))
    booked = ca.reconcile(request(), T0, decision, pods_scheduled=True)
    assert booked.next_at == T0 + 3600
    revoked = ca.reconcile(booked.request, Time(T0 + 3600), decision, pods_scheduled=True)
    assert provisioning_request_phase(revoked.request) == c.PR_CAPACITY_REVOKED
    assert revoked.written[-1].reason == c.CA_REASON_CAPACITY_REVOKED and revoked.next_at is None


def test_not_found_answers_once_and_waits_for_the_next_decision() -> None:
    decision = Decision(Answer.NOT_FOUND, T0)
    once = ca.reconcile(request(), T0, decision)
    assert conditions(once.request)[c.PR_PROVISIONED] == (c.FALSE, "CapacityIsNotFound")
    again = ca.reconcile(once.request, Time(T0 + 5), decision)
    assert again.written == () and again.next_at == T0 + ca.EXPIRATION_TIME
    retried = ca.reconcile(once.request, Time(T0 + 60), Decision(Answer.PROVISION, Time(T0 + 60)))
    assert conditions(retried.request)[c.PR_PROVISIONED] == (c.TRUE, "CapacityIsFound")


def test_a_request_never_provisioned_expires_after_7_days() -> None:
    done = ca.reconcile(request(), Time(T0 + ca.EXPIRATION_TIME), Decision(Answer.PROVISION, Time(T0 + 10**7)))
    assert conditions(done.request)[c.PR_FAILED] == (c.TRUE, "Expired")


def test_what_no_capacity_means_depends_on_the_class() -> None:
    assert ca.no_capacity_answer(request(params={"noRetry": "true"})) == Answer.FAIL
    assert ca.no_capacity_answer(request()) == Answer.NOT_FOUND
    assert ca.no_capacity_answer(request(cls=c.CLASS_BEST_EFFORT_ATOMIC)) == Answer.NOT_FOUND
    assert ca.no_capacity_answer(request(cls="queued-provisioning.gke.io")) == Answer.FAIL


def test_ca_backoff_doubles_to_10_minutes() -> None:
    assert [ca.ca_backoff(n) for n in (1, 2, 3, 4, 5, 30)] == [60, 120, 240, 480, 600, 600]


def reachable(source: str) -> set[str]:
    """The states the declared machine leads to from ``source`` (itself included)."""
    seen, todo = {source}, [source]
    while todo:
        state = todo.pop()
        for edge in PROVISIONING_REQUEST_MACHINE.edges:
            if edge.source == state and edge.target not in seen:
                seen.add(edge.target)
                todo.append(edge.target)
    return seen


decisions = st.builds(Decision, st.sampled_from(list(Answer)), st.integers(T0, T0 + 1200).map(Time),
                      st.none() | st.integers(T0, T0 + 2400).map(Time))


@given(decisions, st.lists(st.tuples(st.integers(0, 900), st.booleans()), min_size=1, max_size=6))
def test_every_move_follows_the_machine_and_repeating_a_call_changes_nothing(
        decision: Decision, steps: list[tuple[int, bool]]) -> None:
    pr, now = request(), T0
    for delay, scheduled in steps:
        now = Time(now + delay)
        before = provisioning_request_phase(pr)
        done = ca.reconcile(pr, now, decision, scheduled)
        after = provisioning_request_phase(done.request)
        assert after in reachable(before)  # each move was fired through the machine, which raises otherwise
        assert done.next_at is None or done.next_at > now
        assert ca.reconcile(done.request, now, decision, scheduled).written == ()
        pr = done.request
    assert all(isinstance(cd, Condition) and cd.type != "" for cd in pr.status.conditions)


@given(decisions, st.sampled_from(c.CA_CLASSES), st.lists(st.tuples(st.integers(0, 900), st.booleans()),
                                                          min_size=1, max_size=6))
def test_what_ca_writes_is_what_the_request_table_declares_for_each_trigger(
        decision: Decision, cls: str, steps: list[tuple[int, bool]]) -> None:
    """Each write is, trigger by trigger, one of the writes ``machines.requests`` declares for
    that trigger (its own reason or one of ``CA_REASONS``), Accepted first when it answers."""
    pr, now = request(cls=cls), T0
    for delay, scheduled in steps:
        now = Time(now + delay)
        done = ca.reconcile(pr, now, decision, scheduled)
        written = [(cd.type, cd.status, cd.reason, cd.message) for cd in done.written]
        for t in done.transitions:
            trigger = RequestTrigger(t.trigger)
            declared = [ca_writes(trigger, reason, answer) for reason in (None, *CA_REASONS.get(trigger, {}))
                        for answer in (False, True)]
            match = next((w for w in declared if tuple(written[:len(w)]) == w), None)
            assert match is not None, (t, written)
            written = written[len(match):]
        assert written == []
        assert all(cd.last_transition_time == now for cd in done.written)
        pr = done.request
