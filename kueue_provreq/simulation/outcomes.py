"""How a workload's story ends, in the words forecast and simulate report (``outcome``)."""

from __future__ import annotations

from enum import StrEnum

from kueue_provreq.machines import WorkloadPhase as P


class Outcome(StrEnum):
    ADMITTED = "Admitted"
    DEACTIVATED = "Deactivated"
    FINISHED = "Finished"
    PENDING = "Pending"
    """Neither of the others when the run stopped (queued, in backoff, holding quota, evicted)."""


#: The phases a story ends in; any other phase reads as :attr:`Outcome.PENDING`.
FINAL: dict[str, Outcome] = {P.ADMITTED: Outcome.ADMITTED, P.INACTIVE: Outcome.DEACTIVATED,
                             P.FINISHED: Outcome.FINISHED}


def outcome_of(phase: str) -> str:
    """The outcome of a story that ended in ``phase``, as the plain string the reports carry
    (YAML writes no enum)."""
    return FINAL.get(phase, Outcome.PENDING).value
