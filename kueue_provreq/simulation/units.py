"""Quota over time in the units people budget in: GPU-hours, cpu-hours, GiB-hours.

The simulation integrates quota exactly, in each resource's base unit (cores, bytes, devices)
times seconds; nobody reads ``1.9e14`` byte-seconds.  A resource measured in bytes (memory,
ephemeral storage, huge pages) is shown in GiB-hours, every other one in its own unit times
hours, named after it (a GPU resource, ``nvidia.com/gpu``, in GPU-hours).

>>> from decimal import Decimal
>>> unit("memory"), unit("cpu"), unit("nvidia.com/gpu"), unit("example.com/fpga")
('GiB-hours', 'cpu-hours', 'GPU-hours', 'fpga-hours')
>>> float(readable({"memory": Decimal(2**30 * 7200)})["memory"])  # two GiB-hours
2.0
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import Decimal

from kueue_provreq.api.frozen import FrozenMap

HOUR = 3600
GIB = 2**30

#: Resources Kubernetes measures in bytes.
_BYTES = ("memory", "ephemeral-storage")
_BYTES_PREFIX = "hugepages-"


def is_bytes(resource: str) -> bool:
    return resource in _BYTES or resource.startswith(_BYTES_PREFIX)


def unit(resource: str) -> str:
    """The unit :func:`readable` gives ``resource`` in."""
    if is_bytes(resource):
        return "GiB-hours"
    name = resource.rpartition("/")[2]
    return f"{name.upper() if name == 'gpu' else name}-hours"


def scale(resource: str) -> Decimal:
    """What one base unit of ``resource`` is in the quantity shown (GiB for bytes)."""
    return Decimal(1) / GIB if is_bytes(resource) else Decimal(1)


def readable(seconds: Mapping[str, Decimal]) -> FrozenMap[str, Decimal]:
    """Per resource, base units times seconds -> :func:`unit` (zeros left out)."""
    return FrozenMap({r: v * scale(r) / HOUR for r, v in seconds.items() if v})


__all__ = ["GIB", "HOUR", "is_bytes", "readable", "scale", "unit"]
