"""Cluster Autoscaler as a simulation file models it: per provisioning class, how long a try
takes to be provisioned or to find no capacity, a chance that a try finds none, periods when
the class has none at all (stock-outs), an optional capacity limit, how long provisioned
capacity stays booked and whether pods that start after the booking lost it, and a chance
that a provider revokes provisioned capacity.

A try's outcome is decided when CA makes it (the request's creation, or CA's own retry after
``Provisioned=False``): whether the class is in a stock-out then, else the try's failure draw.
The answer comes ``failedTime`` or ``provisionedTime`` after the creation (at once for a CA
retry, which is a pick of CA's loop), when a capacity limit is checked too.

Every draw comes from a ``random.Random`` seeded by the simulation's seed and the thing drawn
for (:class:`Draws`): the n-th try of request ``ns/name`` always draws the same numbers, in
whatever order the run reaches it, and the *i*-th period of a class's stock-out process is the
same in every run with that seed.  So two runs that differ in one setting (a sweep's points)
differ only where the model's behaviour does, not by the luck of the draw.
"""

from __future__ import annotations

import bisect
import random
from decimal import Decimal

from kueue_provreq.api import constants as c
from kueue_provreq.api.meta import Time
from kueue_provreq.api.objects import Key, key_of
from kueue_provreq.api.provisioning import PodTemplate, ProvisioningRequest
from kueue_provreq.api.workload import PodSet
from kueue_provreq.autoscaler import Answer, Decision, ca_backoff, no_capacity_answer
from kueue_provreq.controllers.usage import pod_requests
from kueue_provreq.simulation.spec import SHORTAGE_FAIL, ClassModel, Simulation, Stockouts
from kueue_provreq.world import World


class Draws:
    """Reproducible randomness: one generator, reseeded by (seed, what, who) for each draw."""

    def __init__(self, seed: int) -> None:
        self.seed = seed
        self._rng = random.Random()

    def rng(self, *key: object) -> random.Random:
        """A generator for ``key``; use it before asking for another."""
        self._rng.seed(self._name(key), version=2)
        return self._rng

    def stream(self, *key: object) -> random.Random:
        """A generator of its own for a sequence of draws made over the run (the arrivals'
        templates): no other draw reseeds it, so the n-th draw does not depend on what else
        was drawn before it."""
        return random.Random(self._name(key))

    def _name(self, key: tuple[object, ...]) -> str:
        return "/".join(map(str, (self.seed, *key)))


class Stockout:
    """One class's alternating available / stock-out periods from ``origin`` on, drawn as far
    as a question needs them (period *i* is drawn from its own key, so the answers do not
    depend on the order of the questions)."""

    def __init__(self, class_name: str, model: Stockouts, origin: int, draws: Draws) -> None:
        self.class_name = class_name
        self.model = model
        self.draws = draws
        self._ends = [origin]  # ends[2i+1]: end of available period i; ends[2i+2]: of stock-out i

    def at(self, t: int) -> bool:
        """Whether the class is out of stock at ``t``."""
        while self._ends[-1] <= t:
            i = len(self._ends) - 1
            which = "available" if i % 2 == 0 else "stockout"
            period = getattr(self.model, which).draw(self.draws.rng(which, self.class_name, i // 2))
            self._ends.append(self._ends[-1] + period)
        k = bisect.bisect_right(self._ends, t)
        return k > 0 and k % 2 == 0


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
        self._short: dict[Key, bool] = {}  # whether the try under way finds no capacity
        self._stockouts = {name: Stockout(name, m.stockouts, sim.start, draws)
                           for name, m in self.classes.items() if m.stockouts is not None}

    def first(self, pr: ProvisioningRequest) -> Decision | None:
        model = self.classes.get(pr.spec.provisioning_class_name)
        if model is None:
            return None
        m = pr.metadata
        created = m.creation_timestamp or 0
        short = self._short[key_of(pr)] = self._finds_none(pr, model, 0, created)
        delay = (model.failed_time if short else model.provisioned_time).draw(
            self.draws.rng("answer", m.namespace, m.name, 0))
        return Decision(Answer.PROVISION, Time(created + delay), booking_time=model.booking_time)

    def resolve(self, pr: ProvisioningRequest, decision: Decision, now: Time) -> Decision:
        class_name = pr.spec.provisioning_class_name
        model = self.classes[class_name]
        m = pr.metadata
        key = key_of(pr)
        short = self._short.pop(key, False)
        demand = self._demand(pr, model)
        used = self.used.setdefault(class_name, {})
        fits = model.capacity is None or all(used.get(r, Decimal(0)) + demand.get(r, Decimal(0)) <= cap
                                             for r, cap in model.capacity.items())
        if short or not fits:
            return Decision(self._shortage(pr, model), now, booking_time=model.booking_time)
        for resource, amount in demand.items():
            used[resource] = used.get(resource, Decimal(0)) + amount
        self.held[key] = (class_name, demand)
        revoke_at = None
        if model.revocation_probability > 0:
            rng = self.draws.rng("revoke", m.namespace, m.name)
            if rng.random() < model.revocation_probability:
                revoke_at = Time(now + model.revocation_time.draw(rng))
        return Decision(Answer.PROVISION, now, revoke_at, model.booking_time)

    def retry(self, pr: ProvisioningRequest, tries: int, now: Time) -> Decision:
        model = self.classes[pr.spec.provisioning_class_name]
        at = now + ca_backoff(tries)
        self._short[key_of(pr)] = self._finds_none(pr, model, tries, at)
        return Decision(Answer.PROVISION, Time(at), booking_time=model.booking_time)

    def capacity_lost(self, pr: ProvisioningRequest) -> bool:
        """Whether the pods of ``pr``, ready only after its booking expired, lost the capacity."""
        p = self.classes[pr.spec.provisioning_class_name].booking_loss_probability
        m = pr.metadata
        return p > 0 and self.draws.rng("booking-loss", m.namespace, m.name).random() < p

    def _finds_none(self, pr: ProvisioningRequest, model: ClassModel, tries: int, at: int) -> bool:
        """Whether try ``tries`` (0: the first) of ``pr``, made at ``at``, finds no capacity."""
        stockout = self._stockouts.get(pr.spec.provisioning_class_name)
        if stockout is not None and stockout.at(at):
            return True
        m = pr.metadata
        return model.failure_probability > 0 and \
            self.draws.rng("fail", m.namespace, m.name, tries).random() < model.failure_probability

    @staticmethod
    def _shortage(pr: ProvisioningRequest, model: ClassModel) -> Answer:
        """What a try without capacity ends with: as the class says, or as the file says for a
        provider's class."""
        if model.shortage is None:
            return no_capacity_answer(pr)
        return Answer.FAIL if model.shortage == SHORTAGE_FAIL else Answer.NOT_FOUND

    def released(self, key: Key) -> None:
        self._short.pop(key, None)
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
