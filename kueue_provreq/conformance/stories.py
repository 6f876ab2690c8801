"""Random stories: small worlds and what happens to them, written down as conformance scenarios.

A story is a seeded random world (a ClusterQueue with one or two flavors and one or two
provisioning checks, each with its own retry settings; jobs of random sizes and priorities) and a
random sequence of what may happen to it: Cluster Autoscaler answering a request (Provisioned,
Failed, BookingExpired, CapacityRevoked), a job arriving, finishing, being deactivated or
reactivated, the clock moving to the next deadline.  The story is chosen step by step against the
model (a :class:`~kueue_provreq.conformance.model.ModelDriver`), so that each step is one the
current state allows, and after every step and its ``settle`` an ``expect`` writes down the settled
state the model reached: every Workload's conditions (type, status, reason), its check states,
retry counts and backoffs, its admission's flavors, every ProvisioningRequest by name (which holds
the attempt) and the ClusterQueue's usage.  The result is an ordinary scenario: ``conform`` replays
it on the model, and ``conform --cluster`` on a real Kueue, where the first ``expect`` that fails is
the first point at which the two disagree.

Real time flows on a cluster while the model's clock stands still between ``advance`` steps: each
settle takes seconds (3 s of quiet after Kueue's last write, more under load) that the story's
clock does not count, so the real Kueue runs ahead of the model by the settles since any moment.
The stories keep that lead from deciding an outcome:

* while the model waits for a deadline, the next step is always the ``advance`` past every pending
  one (the real Kueue, ahead, has passed it too by then);
* a Retry backoff is counted from the check's *previous* transition (Kueue keeps the check's
  ``lastTransitionTime`` when it goes ``Retry``), which may lie many settles back.  So an answer
  that may start a backoff (:data:`BACKOFF_ANSWERS`, while the check has retries left) is given
  only to a *fresh* check, one whose ``lastTransitionTime`` changed in the step just before: the
  real Kueue is then at most two settles (:data:`SETTLE_BOUND` each) past the transition when the
  answer's state is compared, less than the shortest backoff (:data:`MIN_BACKOFF`), so on both
  sides the workload keeps its quota while the backoff runs.  A *stale* check's answer comes with
  an ``advance`` past the longest backoff it could start (:func:`stale_answer_advance`), so on both
  sides the backoff is over when the check goes ``Retry`` and the workload is evicted at once.

Workloads never share a creation second (their queue order would then rest on uids).
"""

from __future__ import annotations

import math
import random
from collections.abc import Iterator
from typing import Any

from kueue_provreq.api import constants as c
from kueue_provreq.api.provisioning import ProvisioningRequest
from kueue_provreq.api.queues import ClusterQueue
from kueue_provreq.api.workload import AdmissionCheckState, Workload
from kueue_provreq.conformance.model import ModelDriver
from kueue_provreq.conformance.runner import Run
from kueue_provreq.conformance.scenario import Scenario, parse_scenario
from kueue_provreq.errors import KueueProvreqError
from kueue_provreq.invariants.upstream import requests_of
from kueue_provreq.machines import PROVISIONING_REQUEST_MACHINE, RequestTrigger, requests
from kueue_provreq.machines.phases import provisioning_request_phase
from kueue_provreq.manifests import dump_object

NAMESPACE = "ns"
#: The Cluster Autoscaler answers a story gives (Accepted alone changes nothing Kueue shows).
ANSWERS = (RequestTrigger.PROVISION, RequestTrigger.FAIL, RequestTrigger.EXPIRE_BOOKING,
           RequestTrigger.REVOKE_CAPACITY)
#: Every Workload condition a story shows; one the model does not have is expected absent.
CONDITIONS = (c.WORKLOAD_QUOTA_RESERVED, c.WORKLOAD_ADMITTED, c.WORKLOAD_EVICTED, c.WORKLOAD_REQUEUED,
              c.WORKLOAD_FINISHED, c.WORKLOAD_PREEMPTED, c.WORKLOAD_DEACTIVATION_TARGET)
#: The answers that may start a Retry backoff (Failed; BookingExpired before admission).
BACKOFF_ANSWERS = (RequestTrigger.FAIL, RequestTrigger.EXPIRE_BOOKING)
#: The longest a step (its action, settle and expectation) is taken to last on a real cluster,
#: in seconds: twice what one took on average (4.0-4.6 s, ``kueue-provreq stories --cluster``, 3
#: side by side on the 2-core machine at a load average of 8-10), rounded up.
SETTLE_BOUND = 10
#: The shortest backoff: a fresh check's answer is compared at most two steps after the check's
#: transition the backoff counts from (2 x SETTLE_BOUND), with 5 s to spare.
MIN_BACKOFF = 2 * SETTLE_BOUND + 5
#: Deadlines further away are never reached: the PodsReady timeout (30 minutes) of an admitted
#: workload, whose pods never start without a job controller.
HORIZON = 120
KUEUE = c.KUEUE_V1BETA2


class StoryError(KueueProvreqError):
    """The model failed on a story it chose itself: a defect of the model or of the generator."""


def story(seed: int, length: int = 8) -> dict[str, Any]:
    """The scenario document of story ``seed``: ``length`` actions, each followed by a settle and
    an expectation of the model's settled state.  The same seed gives the same story."""
    rng = random.Random(seed)
    objects, arrivals = _world(rng)
    doc: dict[str, Any] = {"name": f"story {seed}",
                           "description": f"a random story (kueue_provreq.conformance.stories, seed {seed})",
                           "objects": objects, "steps": []}
    return _Recorder(doc, arrivals, rng).record(length)


# --- the world -------------------------------------------------------------------------------------


def _world(rng: random.Random) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """The objects a story starts with, and the workloads that arrive, in order.  No workload is
    there from the start: a real cluster creates a world's objects one by one, and a workload
    Kueue meets before its ClusterQueue exists keeps a stale ``Misconfigured`` reason there."""
    flavors = [f"f{i + 1}" for i in range(rng.choice((1, 1, 2)))]
    # one check: with two, the real Kueue fails to start the job (both checks' podSetUpdates set
    # the same annotation), which the model does not model (specs/stories/two-provisioning-checks-*)
    checks = ["check1"]
    objects: list[dict[str, Any]] = [
        {"apiVersion": KUEUE, "kind": c.RESOURCE_FLAVOR, "metadata": {"name": f}} for f in flavors]
    for check in checks:
        base = rng.randint(MIN_BACKOFF, MIN_BACKOFF + 5)
        objects.append({"apiVersion": KUEUE, "kind": c.ADMISSION_CHECK, "metadata": {"name": check},
                        "spec": {"controllerName": c.PROVISIONING_REQUEST_CONTROLLER_NAME,
                                 "parameters": {"apiGroup": c.KUEUE_GROUP, "kind": c.PROVISIONING_REQUEST_CONFIG,
                                                "name": f"prc-{check}"}}})
        objects.append({"apiVersion": KUEUE, "kind": c.PROVISIONING_REQUEST_CONFIG,
                        "metadata": {"name": f"prc-{check}"},
                        "spec": {"provisioningClassName": c.CLASS_CHECK_CAPACITY,
                                 "retryStrategy": {"backoffLimitCount": rng.randint(0, 2),
                                                   "backoffBaseSeconds": base,
                                                   "backoffMaxSeconds": base + rng.randint(0, 10)}}})
    objects.append({"apiVersion": KUEUE, "kind": c.CLUSTER_QUEUE, "metadata": {"name": "cq"}, "spec": {
        "namespaceSelector": {},
        # not StrictFIFO: after a Retry eviction the real Kueue admits the workload behind first
        # (specs/stories/retry-eviction-requeues-before-the-next-cycle.yaml)
        "queueingStrategy": c.BEST_EFFORT_FIFO,
        "resourceGroups": [{"coveredResources": ["cpu"], "flavors": [
            {"name": f, "resources": [{"name": "cpu", "nominalQuota": str(rng.randint(2, 4))}]} for f in flavors]}],
        "admissionChecksStrategy": {"admissionChecks": [{"name": ch} for ch in checks]}}})
    objects.append({"apiVersion": KUEUE, "kind": c.LOCAL_QUEUE, "metadata": {"namespace": NAMESPACE, "name": "lq"},
                    "spec": {"clusterQueue": "cq"}})
    jobs = [_workload(rng, f"wl{i + 1}") for i in range(rng.randint(1, 4))]
    return objects, jobs


def _workload(rng: random.Random, name: str) -> dict[str, Any]:
    cpu = rng.choice((1, 1, 2, 3))
    return {"apiVersion": KUEUE, "kind": c.WORKLOAD, "metadata": {"namespace": NAMESPACE, "name": name}, "spec": {
        "queueName": "lq", "priority": rng.choice((0, 0, 10)),
        "podSets": [{"name": "main", "count": 1, "template": {"spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "c", "resources": {"requests": {"cpu": str(cpu)}}}]}}}]}}


# --- the story -------------------------------------------------------------------------------------


class _Recorder:
    """Chooses each action against the model, runs it, and writes down the settled state."""

    def __init__(self, doc: dict[str, Any], arrivals: list[dict[str, Any]], rng: random.Random) -> None:
        self.doc = doc
        self.arrivals = arrivals
        self.rng = rng
        scenario = parse_scenario({**doc, "steps": [{"settle": {}}]}, doc["name"])
        self.driver = ModelDriver(scenario)
        self.run = Run(scenario, driver=self.driver, debug=True)
        self.driver.begin(scenario.objects, scenario.clock)
        self.seen_requests: set[str] = set()
        # (workload, check) -> (its lastTransitionTime, the steps since it last changed)
        self.transitions: dict[tuple[str, str], tuple[float | None, int]] = {}
        self.retry = {o["metadata"]["name"].removeprefix("prc-"): o["spec"]["retryStrategy"]
                      for o in doc["objects"] if o["kind"] == c.PROVISIONING_REQUEST_CONFIG}

    def record(self, length: int) -> dict[str, Any]:
        self._do()
        for _ in range(self.rng.randint(1, len(self.arrivals))):  # those there when the story starts
            self._do({"advance": "1s"}, {"apply": self.arrivals.pop(0)})
        for _ in range(length):
            if not self._act():
                break
        return self.doc

    def _do(self, *steps: dict[str, Any]) -> None:
        """Run the steps on the model, then settle and write down the state."""
        for step in (*steps, {"settle": {}}):
            parsed = parse_scenario({"name": "step", "objects": [], "steps": [step]}, "step").steps[0]
            failure = self.run.run_step(parsed)
            if failure is not None:
                raise StoryError(f"{self.doc['name']}: {step}: {failure}")
            self.doc["steps"].append(step)
        self.doc["steps"].append({"expect": self._expectation()})
        self._age_transitions()

    def _age_transitions(self) -> None:
        """One more step since each check's lastTransitionTime changed (0: changed in this one)."""
        seen: dict[tuple[str, str], tuple[float | None, int]] = {}
        for wl in self.world.objects(c.WORKLOAD):
            assert isinstance(wl, Workload)
            for state in wl.status.admission_checks:
                key = (wl.metadata.name, state.name)
                time, age = self.transitions.get(key, (None, -1))
                t = None if state.last_transition_time is None else float(state.last_transition_time)
                seen[key] = (t, age + 1 if t == time else 0)
        self.transitions = seen

    @property
    def world(self) -> Any:
        return self.driver.world

    def _act(self) -> bool:
        """One action; False when the story has nothing left to happen."""
        due = self._deadlines()
        if due:
            # nothing but the advance past every pending deadline: real time flows between steps
            self._do({"advance": f"{math.ceil(max(due) - self.driver.now) + self.rng.randint(0, 1)}s"})
            return True
        choices = list(self._choices())
        if not choices:
            return False
        (_, steps), = self.rng.choices(choices, [w for w, _ in choices])
        if "apply" in steps[-1]:
            self.arrivals.pop(0)
        self._do(*steps)
        return True

    def _deadlines(self) -> list[float]:
        """The times within :data:`HORIZON` at which the model will act by itself: a check's
        backoff ends, a workload's ``requeueAt`` comes, a controller asked to be woken."""
        now = self.driver.now
        found = []
        for wl in self.world.objects(c.WORKLOAD):
            assert isinstance(wl, Workload)
            for s in wl.status.admission_checks:
                if s.state == c.CHECK_RETRY and s.requeue_after_seconds is not None and s.last_transition_time:
                    found.append(float(s.last_transition_time + s.requeue_after_seconds))
            rs = wl.status.requeue_state
            if rs is not None and rs.requeue_at is not None:
                found.append(float(rs.requeue_at))
        wake = self.driver.manager.next_wake_up
        if wake is not None:
            found.append(wake)
        return [t for t in found if now < t <= now + HORIZON]

    def _choices(self) -> Iterator[tuple[int, tuple[dict[str, Any], ...]]]:
        """(weight, steps) of every action the state allows."""
        workloads = [w for w in self.world.objects(c.WORKLOAD) if isinstance(w, Workload)]
        for wl in workloads:
            for state in wl.status.admission_checks:
                prs = requests_of(self.world.objects(c.PROVISIONING_REQUEST), wl, state.name)
                if not prs:
                    continue
                pr = prs[-1][1]
                for trigger in _answers(pr):
                    wait = self.stale_answer_advance(wl, state) if trigger in BACKOFF_ANSWERS else 0
                    yield 4, (*([{"advance": f"{wait}s"}] if wait else []), *(
                        {"autoscaler": {"request": pr.metadata.name, "namespace": NAMESPACE, "condition": cond,
                                        "status": status, "reason": reason, "message": message}}
                        for cond, status, reason, message in requests.CA_WRITES[trigger]))
            name = wl.metadata.name
            if wl.is_finished():
                continue
            if wl.is_admitted():
                yield 2, (_patch(name, {"status": {"conditions": [
                    {"type": c.WORKLOAD_FINISHED, "status": c.TRUE, "reason": c.REASON_FINISHED_SUCCEEDED,
                     "message": c.MSG_JOB_FINISHED}]}}),)
            if wl.is_active:
                yield 1, (_patch(name, {"spec": {"active": False}}),)
            elif _user_deactivated(wl):
                yield 1, (_patch(name, {"spec": {"active": True}}),)
        if self.arrivals:
            # a second later, so that no two workloads share a creation second
            yield 2, ({"advance": "1s"}, {"apply": self.arrivals[0]})

    def stale_answer_advance(self, wl: Workload, state: AdmissionCheckState) -> int:
        """The seconds to advance before an answer that may start a backoff for ``state``: 0 for
        a fresh check (changed in the step before), a check without retries left or one whose
        longest backoff is already over on the story's clock; else past the longest backoff it
        could start, counted from its lastTransitionTime (see the module's docstring)."""
        retry = self.retry[state.name]
        if (state.retry_count or 0) >= retry["backoffLimitCount"] or state.last_transition_time is None:
            return 0
        _, age = self.transitions.get((wl.metadata.name, state.name), (None, 1))
        if age == 0:
            return 0
        longest: int = retry["backoffMaxSeconds"]
        return max(0, math.ceil(float(state.last_transition_time) + longest - self.driver.now) + 1)

    def _expectation(self) -> dict[str, Any]:
        objects: list[dict[str, Any]] = []
        for wl in sorted(self.world.objects(c.WORKLOAD), key=lambda o: o.metadata.name):
            assert isinstance(wl, Workload)
            objects.append(_workload_state(wl))
        requests_now = sorted(pr.metadata.name for pr in self.world.objects(c.PROVISIONING_REQUEST))
        objects.extend({"apiVersion": "autoscaling.x-k8s.io/v1", "kind": c.PROVISIONING_REQUEST,
                        "metadata": {"namespace": NAMESPACE, "name": name}} for name in requests_now)
        for cq in self.world.objects(c.CLUSTER_QUEUE):
            assert isinstance(cq, ClusterQueue)
            objects.append(_queue_state(cq))
        gone = sorted(self.seen_requests - set(requests_now))
        self.seen_requests |= set(requests_now)
        expect: dict[str, Any] = {
            "objects": objects,
            "count": {c.WORKLOAD: len(self.world.objects(c.WORKLOAD)), c.PROVISIONING_REQUEST: len(requests_now)}}
        if gone:
            expect["absent"] = [{"kind": c.PROVISIONING_REQUEST, "namespace": NAMESPACE, "name": n} for n in gone]
        return expect


def _user_deactivated(wl: Workload) -> bool:
    """Whether the user, not Kueue, deactivated it.  Reactivating a workload Kueue deactivated is
    the release-versus-main gap of upstream #14870 (fixed in main, not in v0.19.2: the release
    never requeues it; docs/differences.rst, specs/workload/reactivation-after-admission-check-
    deactivation.yaml), so the stories reactivate only what they deactivated."""
    requeued = wl.condition(c.WORKLOAD_REQUEUED)
    return requeued is None or requeued.reason == c.REASON_DEACTIVATED


def _answers(pr: ProvisioningRequest) -> list[RequestTrigger]:
    phase = provisioning_request_phase(pr)
    return [t for t in ANSWERS if (phase, t) in PROVISIONING_REQUEST_MACHINE.by_key]


def _patch(name: str, merge: dict[str, Any]) -> dict[str, Any]:
    return {"patch": {"kind": c.WORKLOAD, "namespace": NAMESPACE, "name": name, "merge": merge}}


def _workload_state(wl: Workload) -> dict[str, Any]:
    """What the stories compare of a Workload."""
    doc = dump_object(wl)
    status = doc.get("status") or {}
    have = {cd["type"]: cd for cd in status.get("conditions") or ()}
    conditions = [{"type": t, "status": have[t]["status"], "reason": have[t].get("reason", "")} if t in have
                  else {"type": t, "$absent": True} for t in CONDITIONS]
    checks = [{"name": s["name"], "state": s["state"],
               "retryCount": s.get("retryCount", {"$absent": True}),
               "requeueAfterSeconds": s.get("requeueAfterSeconds", {"$absent": True})}
              for s in status.get("admissionChecks") or ()]
    if not wl.is_active:
        # a known difference: the real Kueue keeps the retryCount of a check rejected after a retry
        # (specs/stories/rejected-check-loses-retry-count-on-deactivation.yaml)
        for check in checks:
            del check["retryCount"]
    admission = status.get("admission")
    shown_admission: Any = {"$absent": True} if admission is None else {
        "clusterQueue": admission["clusterQueue"],
        "podSetAssignments": [{"name": a["name"], "flavors": a.get("flavors") or {}}
                              for a in admission.get("podSetAssignments") or ()]}
    return {"apiVersion": KUEUE, "kind": c.WORKLOAD, "metadata": {"namespace": NAMESPACE, "name": wl.metadata.name},
            "spec": {"active": wl.is_active},
            "status": {"conditions": conditions, "admissionChecks": checks, "admission": shown_admission}}


def _queue_state(cq: ClusterQueue) -> dict[str, Any]:
    """What the stories compare of a ClusterQueue: its usage and its workload counts."""
    status = dump_object(cq).get("status") or {}
    shown = {key: status.get(key, {"$absent": True}) if key.endswith("Workloads") else status.get(key) or []
             for key in ("flavorsReservation", "flavorsUsage", "pendingWorkloads", "reservingWorkloads",
                         "admittedWorkloads")}
    return {"apiVersion": KUEUE, "kind": c.CLUSTER_QUEUE, "metadata": {"name": cq.metadata.name}, "status": shown}


def scenarios(seeds: range | list[int], length: int = 8) -> Iterator[Scenario]:
    """The stories of ``seeds``, read as scenarios."""
    for seed in seeds:
        doc = story(seed, length)
        yield parse_scenario(doc, doc["name"])
