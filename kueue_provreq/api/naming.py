"""How Kueue names the objects it creates: a job's Workload, the objects of a provisioning check,
and how an attempt is read back off a request's name.

One module for the rules, because several readers need them: the job integration and the
provisioning controller (which create and select objects by them), ``explain``, the invariants
and the conformance runner.
"""

from __future__ import annotations

import hashlib

from kueue_provreq.api import constants as c


def limit_object_name(name: str) -> str:
    """Keep names within 253 bytes by hashing the tail; upstream has no 63-character rule."""
    if len(name) <= c.OBJECT_NAME_MAX_PREFIX and name.isascii():
        return name  # the usual name: as many bytes as characters, without encoding it
    raw = name.encode()
    if len(raw) <= c.OBJECT_NAME_MAX_PREFIX:
        return name
    digest = hashlib.sha1(raw).hexdigest()[: c.OBJECT_NAME_HASH_LENGTH]
    return raw[: c.OBJECT_NAME_MAX_PREFIX].decode(errors="ignore") + "-" + digest


_GENERATE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
"""``k8s.io/apimachinery/pkg/util/rand``'s alphabet (no vowels, no look-alike digits)."""


def generated_name(namespace: str, prefix: str, ordinal: int = 0) -> str:
    """``prefix`` + 5 characters, as the API server completes ``generateName``, but
    reproducible: the ``ordinal``-th object with this prefix in this namespace gets the same
    name every time (and another than the others).

    >>> generated_name("default", "sample-job-"), generated_name("default", "sample-job-", 1)
    ('sample-job-hql7p', 'sample-job-qwdtm')
    """
    seed = f"{namespace}/{prefix}" if ordinal == 0 else f"{namespace}/{prefix}#{ordinal}"
    digest = hashlib.sha1(seed.encode()).digest()
    return prefix + "".join(_GENERATE_ALPHABET[b % len(_GENERATE_ALPHABET)] for b in digest[:5])


def workload_name_for_owner(kind: str, group: str, name: str, uid: str) -> str:
    """``jobframework.GetWorkloadNameForOwnerWithGVK``: ``<kind, lower case>-<name>``, cut to
    247 characters, ``-`` and the first 5 hex digits of ``sha1("<kind>\\n<group>\\n<name>\\n<uid>")``
    (ShortWorkloadNames, which cuts to 63, is off at the modelled snapshot).

    >>> workload_name_for_owner("Job", "batch", "sample-job", "00000000-0000-4000-8000-000000000001")
    'job-sample-job-9d55b'
    """
    prefix = f"{kind.lower()}-{name}"[:c.OBJECT_NAME_MAX_PREFIX]
    digest = hashlib.sha1(f"{kind}\n{group}\n{name}\n{uid}".encode()).hexdigest()
    return f"{prefix}-{digest[:c.OBJECT_NAME_HASH_LENGTH]}"


def provisioning_request_name(workload: str, check: str, attempt: int) -> str:
    """``<workload>-<check>-<attempt>``, attempts counted from 1."""
    return limit_object_name(f"{workload}-{check}-{attempt}")


def pod_template_name(request: str, pod_set: str) -> str:
    """Built from the request's (possibly already hashed) name, as upstream does."""
    return limit_object_name(f"{c.POD_TEMPLATE_PREFIX}-{request}-{pod_set}")


def attempt_prefix(workload: str, check: str) -> str:
    """Not memoised: a short name costs one length test, less than a memo's lookup, and a
    bounded memo keyed by workload misses on every lookup once a world has more workloads."""
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
