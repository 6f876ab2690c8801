"""The batch/v1 Job that owns a Workload, reduced to what the job integration reads and writes."""

from __future__ import annotations

from typing import ClassVar

import attrs

from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import EMPTY, FrozenMap
from kueue_provreq.api.meta import Json, ObjectMeta


@attrs.frozen
class JobSpec:
    suspend: bool | None = None
    parallelism: int | None = None
    completions: int | None = None
    template: FrozenMap[str, Json] = EMPTY
    extra: FrozenMap[str, Json] = EMPTY


@attrs.frozen(cache_hash=True)
class Job:
    KIND: ClassVar[str] = c.JOB
    NAMESPACED: ClassVar[bool] = True

    metadata: ObjectMeta
    spec: JobSpec = JobSpec()
    status: FrozenMap[str, Json] = EMPTY
    extra: FrozenMap[str, Json] = EMPTY
