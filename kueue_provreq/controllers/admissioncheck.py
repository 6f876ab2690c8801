"""The provisioning AdmissionCheck reconciler (``admissioncheck_reconciler.go``): keeps the
``Active`` condition of every check the provisioning controller owns.

The check is Active while its parameters reference is well formed and names an existing
ProvisioningRequestConfig; otherwise ``Active=False`` with reason ``BadParametersRef`` and the
reference error as message.  Upstream writes only when the *status* flips, so moving from
one bad reference to another keeps the old message and observedGeneration; the model keeps
that quirk.
"""

from __future__ import annotations

from kueue_provreq.api import constants as c
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.meta import Condition, find_condition, set_condition
from kueue_provreq.api.objects import Key, not_in_cache
from kueue_provreq.api.queues import AdmissionCheck, ParametersReference
from kueue_provreq.controllers.context import Context
from kueue_provreq.world import NOTHING, Result, Txn, World


def reference_error(ref: ParametersReference | None) -> str | None:
    """``ConfigFromRef``'s checks of the reference itself, in upstream's order (nil, empty name,
    group, kind): the error text, or None when it may name a ProvisioningRequestConfig."""
    if ref is None:
        return c.ERR_MISSING_PARAMETERS
    if not ref.name:
        return c.ERR_EMPTY_NAME
    if ref.api_group != c.KUEUE_GROUP:
        return c.ERR_WRONG_GROUP.format(group=ref.api_group)
    if ref.kind != c.PROVISIONING_REQUEST_CONFIG:
        return c.ERR_WRONG_KIND.format(kind=ref.kind)
    return None


def reconcile(world: World, key: Key, ctx: Context) -> Result:
    txn = Txn(world, ctx.now)
    ac = txn.get(*key)
    if not isinstance(ac, AdmissionCheck) or ac.spec.controller_name != c.PROVISIONING_REQUEST_CONTROLLER_NAME:
        return NOTHING
    gen = ac.metadata.generation
    ref = ac.spec.parameters
    error = reference_error(ref)
    if error is None and ref is not None and txn.get(c.PROVISIONING_REQUEST_CONFIG, "", ref.name) is None:
        error = not_in_cache(c.PROVISIONING_REQUEST_CONFIG, ref.name)
    if error is None:
        new = Condition(c.ADMISSION_CHECK_ACTIVE, c.TRUE, c.REASON_AC_ACTIVE, c.MSG_AC_ACTIVE, None, gen)
    else:
        new = Condition(c.ADMISSION_CHECK_ACTIVE, c.FALSE, c.REASON_BAD_PARAMETERS_REF, error, None, gen)
    current = find_condition(ac.status.conditions, c.ADMISSION_CHECK_ACTIVE)
    if current is not None and current.status == new.status:
        return NOTHING
    conditions, _ = set_condition(ac.status.conditions, new, ctx.now)
    failed = txn.update(evolve(ac, status=evolve(ac.status, conditions=conditions)))
    return txn.result(error=failed)
