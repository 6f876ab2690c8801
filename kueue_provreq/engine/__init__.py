"""The engine: the controller manager that runs the sans-IO controllers over a World until
nothing changes, in three rooms.

- :mod:`.manager` (with :mod:`.due`, :mod:`.write` and :mod:`.routing`): the queue of due
  reconciles, the wake-ups, the write path that applies a reconcile's effects and records each
  change once, and the routing of each change through the registry's watches;
- :mod:`.quiet`: which Workload reconciles left nothing to do, and whether a write wakes them;
- :mod:`.verify`: verify mode, a verifying manager; the fast engine (``verify=False``) runs none
  of it.
"""

from kueue_provreq.engine.manager import (
    ALL_CONTROLLERS,
    SCHEDULER,
    Manager,
    Recorder,
    SettleError,
    changes_world,
    describe,
)
from kueue_provreq.engine.verify import VerifyingManager, verify_change

__all__ = ["ALL_CONTROLLERS", "SCHEDULER", "Manager", "Recorder", "SettleError", "VerifyingManager",
           "changes_world", "describe", "verify_change"]
