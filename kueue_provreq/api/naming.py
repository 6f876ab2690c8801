"""How Kueue names the objects of a provisioning check, and how an attempt is read back off a name.

One module for the rule, because four readers need it: the provisioning controller (which
creates and selects requests by it), ``explain``, the invariants and the conformance runner.
"""

from __future__ import annotations

import functools
import hashlib

from kueue_provreq.api import constants as c


def limit_object_name(name: str) -> str:
    """Keep names within 253 bytes by hashing the tail; upstream has no 63-character rule."""
    raw = name.encode()
    if len(raw) <= c.OBJECT_NAME_MAX_PREFIX:
        return name
    digest = hashlib.sha1(raw).hexdigest()[: c.OBJECT_NAME_HASH_LENGTH]
    return raw[: c.OBJECT_NAME_MAX_PREFIX].decode(errors="ignore") + "-" + digest


def provisioning_request_name(workload: str, check: str, attempt: int) -> str:
    """``<workload>-<check>-<attempt>``, attempts counted from 1."""
    return limit_object_name(f"{workload}-{check}-{attempt}")


def pod_template_name(request: str, pod_set: str) -> str:
    """Built from the request's (possibly already hashed) name, as upstream does."""
    return limit_object_name(f"{c.POD_TEMPLATE_PREFIX}-{request}-{pod_set}")


@functools.lru_cache(maxsize=4096)
def attempt_prefix(workload: str, check: str) -> str:
    """Memoised: every reconcile of a workload with a request asks it several times."""
    return limit_object_name(f"{workload}-{check}-")


def attempt_of(name: str, workload: str, check: str) -> int | None:
    """The attempt a request's name carries for this (workload, check): ``^<prefix>([0-9]+)$``
    (without a regex: the controller asks it of every owned request), or None when the name
    is not one of theirs (a hashed long name never is: upstream's latent bug)."""
    prefix = attempt_prefix(workload, check)
    if not name.startswith(prefix):
        return None
    digits = name[len(prefix):]
    return int(digits) if digits.isascii() and digits.isdigit() else None
