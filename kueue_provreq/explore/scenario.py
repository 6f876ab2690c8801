"""A counterexample trace as a conformance scenario (docs: the conformance format contract).

The scenario starts from the explorer's objects as a user would create them (the runner
gives them uids and the clock, as the explorer does), replays the trace step by step in the
format's own vocabulary, and ends with an ``expect`` of what the violating state looks like,
so ``kueue-provreq conform`` reproduces the finding.
"""

from __future__ import annotations

from typing import Any

from kueue_provreq.api import constants as c
from kueue_provreq.api.workload import Workload
from kueue_provreq.explore.search import NAMESPACE, Action, Explorer, Violation
from kueue_provreq.machines import RequestTrigger, requests
from kueue_provreq.manifests import dump_object

_SHOWN_CONDITIONS = (c.WORKLOAD_QUOTA_RESERVED, c.WORKLOAD_ADMITTED, c.WORKLOAD_EVICTED, c.WORKLOAD_REQUEUED)


def step_of(action: Action) -> list[dict[str, Any]]:
    """The conformance steps one explorer action stands for."""
    if action.kind == "settle":
        return [{"settle": {}}]
    if action.kind == "advance":
        return [{"advance": f"{action.seconds}s"}]
    if action.kind == "reconcile":
        body: dict[str, Any] = {"controller": action.controller}
        if action.workload:
            body["workload"] = action.workload
        return [{"reconcile": body}]
    return [{"autoscaler": {"request": action.request, "namespace": NAMESPACE, "condition": t, "status": s,
                            "reason": r, "message": m}}
            for t, s, r, m in requests.CA_WRITES[RequestTrigger(action.trigger)]]


def _workload_expectation(wl: Workload) -> dict[str, Any]:
    conds = [{"type": x.type, "status": x.status, "reason": x.reason}
             for x in wl.status.conditions if x.type in _SHOWN_CONDITIONS]
    checks = [{"name": s.name, "state": s.state} for s in wl.status.admission_checks]
    return {"apiVersion": c.KUEUE_V1BETA2, "kind": c.WORKLOAD,
            "metadata": {"namespace": wl.metadata.namespace, "name": wl.metadata.name},
            **({"spec": {"active": wl.spec.active}} if wl.spec.active is not None else {}),
            "status": {"conditions": conds, "admissionChecks": checks}}


def to_scenario(ex: Explorer, violation: Violation, name: str, description: str) -> dict[str, Any]:
    config: dict[str, Any] = {"featureGates": {c.GATE_KEEP_QUOTA_FOR_PROVREQ_RETRY: ex.opts.keep_quota}}
    if ex.opts.semantics != "current":
        config["admissionCheckSemantics"] = ex.opts.semantics
    steps = [s for a in violation.trace for s in step_of(a)]
    world = violation.world
    steps.append({"expect": {
        "objects": [_workload_expectation(wl) for wl in world.objects(c.WORKLOAD) if isinstance(wl, Workload)],
        "count": {c.PROVISIONING_REQUEST: len(world.objects(c.PROVISIONING_REQUEST))},
    }})
    return {"name": name, "description": description, "config": config,
            "objects": [dump_object(o) for o in ex.objects], "steps": steps}
