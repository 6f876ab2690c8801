"""The three lifecycles, each declared once with ``transitions``, and the frozen tables derived from them."""

from kueue_provreq.machines.declarations import (
    ADMISSION_CHECK_MACHINE,
    MACHINES,
    PROVISIONING_REQUEST_MACHINE,
    WORKLOAD_MACHINE,
)
from kueue_provreq.machines.table import Edge, IllegalTransition, MachineTable

__all__ = ["ADMISSION_CHECK_MACHINE", "MACHINES", "PROVISIONING_REQUEST_MACHINE", "WORKLOAD_MACHINE",
           "Edge", "IllegalTransition", "MachineTable"]
