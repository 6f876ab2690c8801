"""A world built from objects as the API server would store them on create.

Every driver that starts from a list of objects (``explain``, ``audit``, ``forecast``, a
simulation's setup) builds its world here, in the core: it needs the world and Kueue's job
webhook (:func:`kueue_provreq.controllers.job.defaulted`), nothing that reads input, so no edge
has to climb to another edge for it.  Decoding manifests is the caller's business (the objects
come in as models already): that keeps this module below :mod:`kueue_provreq.manifests`.
"""

from __future__ import annotations

from collections.abc import Iterable

from kueue_provreq.api.config import Configuration
from kueue_provreq.api.meta import Time
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.controllers import job
from kueue_provreq.world import World


def build_world(objects: Iterable[KubeObject], now: Time, config: Configuration = Configuration()) -> World:
    """The objects as the API server would store them on create, in order: a uid, generation 1
    and the creation time ``now`` unless given, and for a job without a uid Kueue's webhook
    defaults."""
    world = World()
    given = list(objects)
    for obj in given:
        if obj.metadata.uid and obj.metadata.name:
            world.put(obj)  # first, so that fresh uids are counted past the given ones
    for i, obj in enumerate(given):
        world.put(world.created(job.defaulted(world, obj, config), now, i))
    return world
