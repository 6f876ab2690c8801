"""The cluster fixtures are what tests/data/cluster/generate.py writes, and what it writes is
real: every modelled object loads as the API server would store it, and the dumps and the
recorded answers hold the same objects."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest
from kueue_provreq.cluster.snapshot import to_objects

DATA = Path(__file__).parent / "data" / "cluster"
UNMODELLED = {"Pod", "Event", "Service", "Deployment", "ConfigMap"}


def generator() -> ModuleType:
    spec = importlib.util.spec_from_file_location("generate_cluster_fixtures", DATA / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_fixtures_are_up_to_date() -> None:
    stale = [str(path.relative_to(DATA)) for path, text in generator().files().items()
             if not path.is_file() or path.read_text() != text]
    assert stale == [], "run .venv/bin/python tests/data/cluster/generate.py"


@pytest.mark.parametrize("cluster", ["healthy", "troubled"])
def test_dump_and_recording_hold_the_same_objects(cluster: str) -> None:
    items = json.loads((DATA / cluster / "dump.json").read_text())["items"]
    exchanges = json.loads((DATA / cluster / "apiserver.json").read_text())["exchanges"]
    listed = {(ex["response"]["body"]["kind"].removesuffix("List"), item["metadata"].get("namespace", ""),
               item["metadata"]["name"]) for ex in exchanges for item in ex["response"]["body"]["items"]}
    dumped = {(i["kind"], i["metadata"].get("namespace", ""), i["metadata"]["name"]) for i in items
              if i["kind"] not in UNMODELLED}
    assert listed == dumped
    assert {i["kind"] for i in items} >= UNMODELLED
    objects, warnings = to_objects([i for i in items if i["kind"] not in UNMODELLED])
    assert warnings == []
    assert len(objects) == len(dumped)
    # what the API server adds is there
    for item in items:
        meta = item["metadata"]
        assert meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"], meta["name"]
    jobs = [i for i in items if i["kind"] == "Job"]
    assert all(j["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"] == j["metadata"]["uid"]
               for j in jobs)
    assert all("kubectl.kubernetes.io/last-applied-configuration" in j["metadata"]["annotations"] for j in jobs)
    assert all(i["metadata"].get("managedFields") for i in items if i["kind"] not in UNMODELLED)
