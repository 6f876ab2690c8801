"""Placeholder: implemented in this issue."""

from __future__ import annotations

from kueue_provreq.api.objects import Key
from kueue_provreq.controllers.context import Context
from kueue_provreq.world import NOTHING, Result, World


def reconcile(world: World, key: Key, ctx: Context) -> Result:
    return NOTHING
