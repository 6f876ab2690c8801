"""Cluster Autoscaler as a simulation file models it: per provisioning class, a time to
answer, a chance that a try finds no capacity, an optional capacity limit and a chance that
a provider revokes provisioned capacity.

Every draw comes from a ``random.Random`` seeded by the simulation's seed and the thing drawn
for (:class:`Draws`): the n-th try of request ``ns/name`` always draws the same numbers, in
whatever order the run reaches it.  So two runs that differ in one setting (a sweep's points)
differ only where the model's behaviour does, not by the luck of the draw.
"""

from __future__ import annotations

import random
from decimal import Decimal

from kueue_provreq.api import constants as c
from kueue_provreq.api.meta import Time
from kueue_provreq.api.objects import Key, key_of
from kueue_provreq.api.provisioning import PodTemplate, ProvisioningRequest
from kueue_provreq.api.workload import PodSet
from kueue_provreq.autoscaler import Answer, Decision, ca_backoff, no_capacity_answer
from kueue_provreq.controllers.usage import pod_requests
from kueue_provreq.simulation.spec import ClassModel, Simulation
from kueue_provreq.world import World


class Draws:
    """Reproducible randomness: one generator, reseeded by (seed, what, who) for each draw."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._rng = random.Random()

    def rng(self, *key: object) -> random.Random:
        """A generator for ``key``; use it before asking for another."""
        self._rng.seed("/".join(map(str, (self.seed, *key))), version=2)
        return self._rng


class FleetModel:
    """The sampled Cluster Autoscaler (see :class:`~kueue_provreq.simulation.drive.Model`).

    A class the file does not model gets the defaults (answered at once, never failing) when
    upstream CA handles it, and is ignored otherwise, as upstream CA ignores it.  Capacity is
    held from provisioning until the request is deleted or revoked."""

    def __init__(self, sim: Simulation, world: World, draws: Draws) -> None:
        self.classes: dict[str, ClassModel] = {name: ClassModel() for name in c.CA_CLASSES}
        self.classes.update(sim.autoscaler)
        self.world = world
        self.draws = draws
        self.used: dict[str, dict[str, Decimal]] = {}
        self.held: dict[Key, tuple[str, dict[str, Decimal]]] = {}
        self._tries: dict[Key, int] = {}

    def first(self, pr: ProvisioningRequest) -> Decision | None:
        model = self.classes.get(pr.spec.provisioning_class_name)
        if model is None:
            return None
        m = pr.metadata
        delay = model.provisioning_time.draw(self.draws.rng("answer", m.namespace, m.name, 0))
        return Decision(Answer.PROVISION, Time((m.creation_timestamp or 0) + delay))

    def resolve(self, pr: ProvisioningRequest, decision: Decision, now: Time) -> Decision:
        class_name = pr.spec.provisioning_class_name
        model = self.classes[class_name]
        m = pr.metadata
        key = key_of(pr)
        tries = self._tries.get(key, 0)
        failed = model.failure_probability > 0 and \
            self.draws.rng("fail", m.namespace, m.name, tries).random() < model.failure_probability
        demand = self._demand(pr, model)
        used = self.used.setdefault(class_name, {})
        fits = model.capacity is None or all(used.get(r, Decimal(0)) + demand.get(r, Decimal(0)) <= cap
                                             for r, cap in model.capacity.items())
        if failed or not fits:
            return Decision(no_capacity_answer(pr), now)
        for resource, amount in demand.items():
            used[resource] = used.get(resource, Decimal(0)) + amount
        self.held[key] = (class_name, demand)
        revoke_at = None
        if model.revocation_probability > 0:
            rng = self.draws.rng("revoke", m.namespace, m.name)
            if rng.random() < model.revocation_probability:
                revoke_at = Time(now + model.revocation_time.draw(rng))
        return Decision(Answer.PROVISION, now, revoke_at)

    def retry(self, pr: ProvisioningRequest, tries: int, now: Time) -> Decision:
        self._tries[key_of(pr)] = tries
        return Decision(Answer.PROVISION, Time(now + ca_backoff(tries)))

    def released(self, key: Key) -> None:
        self._tries.pop(key, None)
        found = self.held.pop(key, None)
        if found is None:
            return
        class_name, demand = found
        used = self.used[class_name]
        for resource, amount in demand.items():
            used[resource] -= amount

    def _demand(self, pr: ProvisioningRequest, model: ClassModel) -> dict[str, Decimal]:
        """What the request's pods ask of the resources the class's capacity limits."""
        if model.capacity is None:
            return {}
        demand: dict[str, Decimal] = {}
        for ps in pr.spec.pod_sets:
            pt = self.world.get(c.POD_TEMPLATE, pr.metadata.namespace, ps.pod_template_ref.name)
            if not isinstance(pt, PodTemplate):
                continue
            requests = pod_requests(PodSet("pod", 1, pt.template))
            for resource in model.capacity:
                if resource in requests:
                    demand[resource] = demand.get(resource, Decimal(0)) + requests[resource] * ps.count
        return demand
