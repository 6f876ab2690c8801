"""The three lifecycles, each declared once with ``transitions``, the frozen tables derived from
them, their typed vocabulary, the table of what a ProvisioningRequest's conditions mean, and
the one function that writes a Workload's phase change (``write_workload``)."""

from kueue_provreq.machines.declarations import (
    ADMISSION_CHECK_MACHINE,
    MACHINES,
    PROVISIONING_REQUEST_MACHINE,
    WORKLOAD_MACHINE,
)
from kueue_provreq.machines.phases import write_workload
from kueue_provreq.machines.requests import RequestPhase, RequestTrigger
from kueue_provreq.machines.table import (
    Edge,
    IllegalTransition,
    MachineTable,
    OptIn,
    Transition,
)
from kueue_provreq.machines.vocabulary import (
    Actor,
    CheckState,
    CheckTrigger,
    Guard,
    WorkloadPhase,
    WorkloadTrigger,
)

__all__ = ["ADMISSION_CHECK_MACHINE", "MACHINES", "PROVISIONING_REQUEST_MACHINE", "WORKLOAD_MACHINE",
           "Actor", "CheckState", "CheckTrigger", "Edge", "Guard", "IllegalTransition", "MachineTable", "OptIn",
           "RequestPhase", "RequestTrigger", "Transition", "WorkloadPhase", "WorkloadTrigger", "write_workload"]
