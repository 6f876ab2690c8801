"""Upstream's example manifests (../shared/upstream/examples), as the tests read them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kueue_provreq.manifests import load_file

#: Examples the modelled Kueue snapshot itself refuses, with the field and the webhook rule.
REFUSED: dict[tuple[str, str], tuple[str, str]] = {
    ("minimal-cq.yaml", "cluster-queue-2"): (
        "spec.admissionChecksStrategy.admissionChecks[0].onFlavors[0]",
        "unsupported value 'default-flavor'"),  # clusterqueue_webhook.go validateAdmissionCheckOnFlavors
}


def examples(upstream: Path) -> list[tuple[Path, dict[str, Any]]]:
    """Every document of every example, with its file."""
    return [(path, doc) for path in sorted((upstream / "examples").glob("*.yaml")) for doc in load_file(path)]


def refused(path: Path, doc: dict[str, Any]) -> tuple[str, str] | None:
    return REFUSED.get((path.name, (doc.get("metadata") or {}).get("name", "")))
