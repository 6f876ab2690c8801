"""A cluster's state as the start of a run: what a dump's objects say happened before it.

``forecast`` on a dump and ``simulate``/``sweep --from`` start from objects that already have a
past: requests Kueue created for earlier attempts, workloads admitted and running.  The run
takes each up where it stands; this module reads that past off the objects, in the terms
Kueue itself counts them, and draws what a dump cannot say (how much longer a running job
runs) from the simulation's job model.
"""

from __future__ import annotations

import math
import random
from statistics import NormalDist

from kueue_provreq.api import constants as c
from kueue_provreq.api import naming
from kueue_provreq.api.queues import AdmissionCheck
from kueue_provreq.api.workload import Workload
from kueue_provreq.simulation.spec import Distribution
from kueue_provreq.world import World

_TAIL = 1e-12
"""A quantile this close to 1 is the distribution's end: a job that ran longer than all
but this share of its kind finishes at once."""


def attempts_before(world: World, wl: Workload) -> int:
    """The attempts the workload's provisioning checks made before the start, as Kueue counts
    them: per check, the highest attempt its requests' names carry, or its retry count when
    that is higher (Kueue deletes the requests of attempts before the last)."""
    m = wl.metadata
    names = [pr.metadata.name for pr in world.owned_by_name(c.PROVISIONING_REQUEST, m.namespace, m.name)]
    total = 0
    for state in wl.status.admission_checks:
        ac = world.get(c.ADMISSION_CHECK, "", state.name)
        if not isinstance(ac, AdmissionCheck) or ac.spec.controller_name != c.PROVISIONING_REQUEST_CONTROLLER_NAME:
            continue
        named = [n for name in names if (n := naming.attempt_of(name, m.name, state.name)) is not None]
        total += max([*named, state.retry_count or 0])
    return total


def remaining(distribution: Distribution, elapsed: int, rng: random.Random) -> int:
    """How much longer a job that has run ``elapsed`` seconds runs, drawn from ``distribution``
    given that it has lasted that long (the running time's conditional distribution, by its
    inverse: a draw of the whole running time less ``elapsed`` would finish every long job at
    once; a fresh draw would ignore that the job is under way).

    >>> rng = random.Random(1)
    >>> remaining(Distribution("fixed", 600), 200, rng), remaining(Distribution("fixed", 600), 900, rng)
    (400, 0)
    >>> 0 <= remaining(Distribution("uniform", 100, 700), 500, rng) <= 200
    True
    """
    kind, a, b = distribution.kind, distribution.a, distribution.b
    if kind == "fixed" or (kind == "lognormal" and b == 0):
        return max(0, round(a - elapsed))
    if kind == "exponential":  # memoryless: what is left is a fresh draw
        return distribution.draw(rng)
    if kind == "uniform":
        return 0 if elapsed >= b else max(0, round(rng.uniform(max(a, elapsed), b) - elapsed))
    if elapsed <= 0:  # lognormal, not yet under way: the whole running time
        return distribution.draw(rng)
    normal = NormalDist()
    low = normal.cdf((math.log(elapsed) - math.log(a)) / b)
    if low >= 1 - _TAIL:
        return 0
    return max(0, round(a * math.exp(b * normal.inv_cdf(rng.uniform(low, 1 - _TAIL))) - elapsed))
