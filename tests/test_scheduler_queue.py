"""What a scheduling cycle's pending queue costs, and that keeping it cheap changes no answer.

The scan reads what a workload's place depends on once per workload object
(``queues._Queued``); these tests hold it to the queue manager's order as the public functions
say it (:func:`queues.order_key`, :func:`queues.set_aside`, :func:`queues.in_backoff`), however
the workloads change between cycles.  And the queue status reconcilers, run last in a settle
(``registry.Controller.last``), write a ClusterQueue's status once per instant at most.
"""

from __future__ import annotations

from collections import Counter

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.meta import Time
from kueue_provreq.api.objects import KubeObject, key_of
from kueue_provreq.api.workload import PodSet, RequeueState, Workload
from kueue_provreq.controllers import queues
from kueue_provreq.controllers.context import Context
from kueue_provreq.simulation import load_document, parse, simulate
from kueue_provreq.simulation.loop import Loop
from kueue_provreq.world import Effect, Update, World

from builders import EXAMPLES, MAIN, T0, at, cond, objects, queue_setup, template, workload

BIG = PodSet("main", 1, template({"cpu": "2"}))
NO_FIT = cond(c.WORKLOAD_QUOTA_RESERVED, c.FALSE, c.REASON_WAITING_FOR_QUOTA, "couldn't assign flavors")


def _workload(i: int, priority: int, shape: int, state: int) -> Workload:
    """Workload ``i``: ``state`` 0 fresh, 1 found not to fit, 2 in backoff for 10 minutes, 3 Requeued=False."""
    conditions = [NO_FIT] if state == 1 else [cond(c.WORKLOAD_REQUEUED, c.FALSE)] if state == 3 else []
    return workload(f"wl-{i}", namespace="default", created=T0 + i, priority=priority, pod_sets=(MAIN, BIG)[shape:][:1],
                    conditions=conditions, requeue_state=RequeueState(1, at(600)) if state == 2 else None)


def _expected(world: World, ctx: Context) -> tuple[list[str], list[str]]:
    """The ready queue and the backoff as the queue manager orders them, from the public functions."""
    waiting = [o for o in world.objects(c.WORKLOAD) if isinstance(o, Workload)]
    ready = [wl for wl in waiting if not queues.in_backoff(wl, ctx.now)]
    aside = queues.set_aside(ready, ctx.config.gate(c.GATE_SCHEDULING_EQUIVALENCE_HASHING))
    ready.sort(key=lambda w: (w.metadata.uid in aside, queues.order_key(w, ctx.config)))
    return [w.metadata.name for w in ready], sorted(w.metadata.name for w in waiting if w not in ready)


_ROWS = st.lists(st.tuples(st.integers(0, 2), st.integers(0, 1), st.integers(0, 3)), min_size=1, max_size=12)


@given(rows=_ROWS, changes=st.lists(st.tuples(st.integers(0, 11), st.integers(0, 2), st.integers(0, 1),
                                              st.integers(0, 3)), max_size=6), later=st.booleans())
def test_a_scan_orders_as_the_queue_manager_does_however_workloads_change_between_cycles(
        rows: list[tuple[int, int, int]], changes: list[tuple[int, int, int, int]], later: bool) -> None:
    setup: list[KubeObject] = objects(queue_setup())
    world = World([*setup, *(_workload(i, *row) for i, row in enumerate(rows))])
    ctx = Context(Time(T0), Configuration())
    for step in range(len(changes) + 1):
        found = queues.scan(world, ctx)
        ready, backoff = _expected(world, ctx)
        assert [w.metadata.name for w in found.ready.get("cq", [])] == ready
        assert sorted(w.metadata.name for w in found.backoff.get("cq", [])) == backoff
        assert [found.shapes["cq"][i] == found.shapes["cq"][j] for i in range(len(ready)) for j in range(len(ready))] \
            == [queues.scheduling_shape(a) == queues.scheduling_shape(b) for a in found.ready.get("cq", [])
                for b in found.ready.get("cq", [])]
        if step < len(changes):
            i, priority, shape, state = changes[step]
            if i < len(rows):  # rewrite workload i (a new object, as every write makes)
                world.apply(Update(_workload(i, priority, shape, state)))
            if later:  # time moves on: backoffs end
                ctx = Context(Time(ctx.now + 400), ctx.config)


def test_the_walk_of_a_backed_up_queue_stops_after_the_last_shape_that_may_fit() -> None:
    small, big = 0, 1
    found = queues.Scan(queues.QueueIndex(World([])), shapes={"cq": [small, big, small, small, big, small]})
    assert found.last_trying("cq", set()) == 5
    assert found.last_trying("cq", {small}) == 4
    assert found.last_trying("cq", {small, big}) == -1
    assert found.last_trying("other", set()) == -1


@pytest.mark.parametrize("example", ["retry-strategy-sweep.yaml", "three-teams-gpu-pool.yaml"])
def test_a_queue_status_is_written_at_most_once_per_instant(example: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """An arrival given quota at once used to write its ClusterQueue twice (pending, then
    reserving); run last in the settle, the status reconcilers write what the settle leaves."""
    writes: Counter[tuple[int, tuple[str, str, str]]] = Counter()
    record = Loop._record

    def counting(self: Loop, controller: str, key: tuple[str, str, str], effect: Effect) -> None:
        if isinstance(effect, Update) and effect.obj.KIND in (c.CLUSTER_QUEUE, c.LOCAL_QUEUE):
            writes[(self.now, key_of(effect.obj))] += 1
        record(self, controller, key, effect)

    monkeypatch.setattr(Loop, "_record", counting)
    simulate(parse(load_document(EXAMPLES / example), count=40))
    assert writes and max(writes.values()) == 1
    assert {key[0] for _, key in writes} == {c.CLUSTER_QUEUE, c.LOCAL_QUEUE}
