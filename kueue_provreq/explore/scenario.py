"""A counterexample trace as a conformance scenario (docs: the conformance format contract).

The scenario starts from the explorer's objects as a user would create them (the runner
gives them uids and the clock, as the explorer does), replays the trace step by step in the
format's own vocabulary, and ends with an ``expect`` of what the violating state looks like,
so ``kueue-provreq conform`` reproduces the finding (it passes).  At ``settle`` granularity the
explorer lets the controllers catch up after every event, so every Cluster Autoscaler step and
every clock advance is followed by a ``settle``; at ``reconcile`` granularity each reconcile is
a step of its own.  A violation that is an exception (an illegal transition, a settle that does
not end) ends with the step that raised it and no ``expect``: ``conform`` fails at that step
with the same error.
"""

from __future__ import annotations

from typing import Any

from kueue_provreq.api import constants as c
from kueue_provreq.api.workload import Workload
from kueue_provreq.explore.search import NAMESPACE, Action, Explorer, Violation, late_arrival
from kueue_provreq.machines import RequestTrigger, requests
from kueue_provreq.manifests import dump_object
from kueue_provreq.manifests.configuration import SEMANTICS_FIELD

_SHOWN_CONDITIONS = (c.WORKLOAD_QUOTA_RESERVED, c.WORKLOAD_ADMITTED, c.WORKLOAD_EVICTED, c.WORKLOAD_REQUEUED)


#: The key a ``reconcile`` step names its object by, per kind.
_RECONCILE_KEYS = {c.WORKLOAD: "workload", c.ADMISSION_CHECK: "admissionCheck", c.CLUSTER_QUEUE: "clusterQueue",
                   c.LOCAL_QUEUE: "localQueue",
                   c.JOB: "job", c.JOBSET: "jobSet", c.PYTORCH_JOB: "pyTorchJob"}


def step_of(action: Action, settles: bool = False, arrival: Workload | None = None) -> list[dict[str, Any]]:
    """The conformance steps one explorer action stands for; ``settles``: the explorer settled
    after it (``settle`` granularity); ``arrival``: the workload a ``submit`` creates."""
    if action.kind == "settle":
        return [{"settle": {}}]
    then: list[dict[str, Any]] = [{"settle": {}}] if settles else []
    if action.kind == "submit":
        assert arrival is not None
        return [{"apply": dump_object(arrival)}, *then]
    if action.kind == "advance":
        return [{"advance": f"{action.seconds}s"}, *then]
    if action.kind == "reconcile":
        body: dict[str, Any] = {"controller": action.controller}
        if action.workload:
            ns, _, name = action.workload.partition("/")
            body[_RECONCILE_KEYS[action.target_kind]] = action.workload if ns else name
        return [{"reconcile": body}]
    return [*({"autoscaler": {"request": action.request, "namespace": NAMESPACE, "condition": t, "status": s,
                              "reason": r, "message": m}}
              for t, s, r, m in requests.CA_WRITES[RequestTrigger(action.trigger)]), *then]


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
    if ex.opts.semantics:
        config[SEMANTICS_FIELD] = sorted(ex.opts.semantics)
    settles = ex.opts.granularity == "settle"
    steps = [s for a in violation.trace for s in step_of(a, settles, late_arrival(ex.opts))]
    world = violation.world
    if violation.raised:
        return {"name": name, "description": description, "config": config,
                "objects": [dump_object(o) for o in ex.objects], "steps": steps}
    steps.append({"expect": {
        "objects": [_workload_expectation(wl) for wl in world.objects(c.WORKLOAD) if isinstance(wl, Workload)],
        "count": {c.PROVISIONING_REQUEST: len(world.objects(c.PROVISIONING_REQUEST))},
    }})
    return {"name": name, "description": description, "config": config,
            "objects": [dump_object(o) for o in ex.objects], "steps": steps}
