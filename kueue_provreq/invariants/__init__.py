"""The oracle: the properties every run must keep, as named, readable predicates.

Three kinds, one module each:

* :mod:`~kueue_provreq.invariants.state` -- *state invariants*, ``f(world, ctx) ->
  violations``: what every state a driver reaches must show;
* :mod:`~kueue_provreq.invariants.step` -- *step invariants*, ``f(before, after, ctx) ->
  violations``: what every step must respect, ``before`` being the ``World.snapshot()`` the
  step started from and ``after`` the world it left;
* :mod:`~kueue_provreq.invariants.preemption` -- both kinds, for preemption within a
  ClusterQueue and KEP-993's preemption policy;
* :mod:`~kueue_provreq.invariants.upstream` -- upstream's rules derived again from the spec
  (attempt numbers, the backoff formula, ``reqIsNeeded``, "in sync with the config",
  ``syncCheckStates``' early return), which the invariants judge by.

:mod:`~kueue_provreq.invariants.registry` holds the registry and the entry points the stateful
tests, the explorer and anyone replaying a trace call:
:func:`~kueue_provreq.invariants.registry.check_state` and
:func:`~kueue_provreq.invariants.registry.check_step` run every invariant that applies under a
:class:`~kueue_provreq.invariants.registry.CheckContext` (the clock, the configuration, and
whether the controllers have ``settled`` or are ``quiescent``).
:data:`~kueue_provreq.invariants.registry.UPSTREAM_VIOLATIONS` names the invariants upstream
itself is known to break under a semantics the model can follow (the explorer labels such a
violation as upstream behaviour).  :mod:`~kueue_provreq.invariants.reading` reads worlds for them.  Every name callers use is
importable from this package.

Each invariant's docstring states the rule, the upstream source it encodes (a section of
``kueue-provisioning-controller.md``, "PC §x", of ``kueue-admission-and-requeue.md``, "AR x.y",
or a KEP), and its exemptions; how an exemption was found is told by the commit that added it.

The oracle is independent of what it judges: it imports no controller, no engine and no
explorer, only the declarations -- the ``api`` models and ``api.naming``, the ``machines``
tables and ``machines.requests`` -- and the ``World`` container.  Where it needs a decision a
controller makes, :mod:`~kueue_provreq.invariants.upstream` writes it again from the spec, so
that a controller's mistake is not mirrored by the check meant to catch it.
"""

from __future__ import annotations

from kueue_provreq.invariants.cohorts import cohort_quota_within_limits
from kueue_provreq.invariants.preemption import (
    no_preemption_before_the_policy_allows_it,
    preempted_only_by_policy,
    preemption_required_only_under_kep_993,
    running_within_nominal_quota,
)
from kueue_provreq.invariants.registry import (
    CURRENT,
    PRE_KEP_3258,
    STATE_INVARIANTS,
    STEP_INVARIANTS,
    UPSTREAM_VIOLATIONS,
    CheckContext,
    Invariant,
    Snapshot,
    check_state,
    check_step,
    upstream_behaviour,
)
from kueue_provreq.invariants.state import (
    admission_matches_reservation,
    admitted_only_with_quota,
    attempts_within_backoff_limit,
    cluster_queue_within_nominal_quota,
    finished_has_no_requests,
    keep_quota_never_evicts_for_retry,
    no_stuck_workload,
    one_live_request_per_check,
    pods_ready_count_within_limit,
    pods_ready_timeout_enforced,
    rejected_check_deactivates,
    requests_and_templates_owned,
    retry_delay_is_exponential,
    retry_not_overdue,
    single_request_per_check,
    states_are_declared,
)
from kueue_provreq.invariants.step import (
    admitted_only_with_ready_checks,
    attempts_never_decrease,
    finished_is_final,
    no_early_requeue,
    no_request_after_rejection,
    pods_ready_limit_deactivates,
    rejection_deactivates,
    retry_moves_the_quota,
    transitions_are_declared,
)
from kueue_provreq.invariants.upstream import (
    attempt_of,
    nominal_retry_delay,
    requests_of,
)

__all__ = ["CURRENT", "CheckContext", "Invariant", "PRE_KEP_3258", "STATE_INVARIANTS", "STEP_INVARIANTS",
           "UPSTREAM_VIOLATIONS", "Snapshot", "upstream_behaviour", "admission_matches_reservation", "admitted_only_with_quota",
           "admitted_only_with_ready_checks", "attempt_of", "attempts_never_decrease",
           "attempts_within_backoff_limit", "check_state", "check_step",
           "cluster_queue_within_nominal_quota", "cohort_quota_within_limits", "finished_has_no_requests", "finished_is_final",
           "keep_quota_never_evicts_for_retry", "no_early_requeue", "no_preemption_before_the_policy_allows_it",
           "no_request_after_rejection",
           "no_stuck_workload", "nominal_retry_delay", "one_live_request_per_check",
           "pods_ready_count_within_limit", "pods_ready_limit_deactivates", "pods_ready_timeout_enforced",
           "preempted_only_by_policy", "preemption_required_only_under_kep_993",
           "rejected_check_deactivates", "rejection_deactivates", "requests_and_templates_owned",
           "requests_of", "retry_delay_is_exponential", "retry_moves_the_quota", "retry_not_overdue",
           "running_within_nominal_quota",
           "single_request_per_check", "states_are_declared", "transitions_are_declared"]
