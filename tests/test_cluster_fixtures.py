"""The cluster fixtures are recordings of a real API server and the real Kueue
(tests/data/cluster/record.py, on the testbed ``make oracle`` builds), not hand-written: they
say how and when they were made, every answer carries what only the server sets, every
modelled object loads, and the dumps and the recorded answers hold the same objects."""

from __future__ import annotations

import json

import pytest
from kueue_provreq.cluster.snapshot import to_objects

from recorded import DATA, RECORDING, UNMODELLED


def test_the_recordings_say_how_and_when_they_were_made() -> None:
    assert RECORDING["command"] == "python tests/data/cluster/record.py"
    assert RECORDING["versions"]["kueue"].startswith("v0.19.")
    assert {"healthy", "restricted", "troubled"} <= set(RECORDING)
    assert RECORDING["troubled"]["at"] < RECORDING["troubled"]["auditAt"]


@pytest.mark.parametrize("cluster", ["healthy", "troubled"])
def test_dump_and_recording_hold_the_same_objects(cluster: str) -> None:
    items = json.loads((DATA / cluster / "dump.json").read_text())["items"]
    exchanges = json.loads((DATA / cluster / "apiserver.json").read_text())["exchanges"]
    listed = {(ex["response"]["body"]["kind"].removesuffix("List"), item["metadata"].get("namespace", ""),
               item["metadata"]["name"]) for ex in exchanges for item in ex["response"]["body"]["items"]}
    dumped = {(i["kind"], i["metadata"].get("namespace", ""), i["metadata"]["name"]) for i in items
              if i["kind"] not in UNMODELLED}
    assert listed == dumped
    assert {i["kind"] for i in items} >= UNMODELLED  # Kueue's events, which the model skips
    objects, warnings = to_objects([i for i in items if i["kind"] not in UNMODELLED])
    assert warnings == []
    assert len(objects) == len(dumped)
    # what only the API server sets is there
    for item in items:
        meta = item["metadata"]
        assert meta["uid"] and meta["resourceVersion"] and meta["creationTimestamp"], meta["name"]
    jobs = [i for i in items if i["kind"] == "Job"]
    assert jobs and all(j["spec"]["selector"]["matchLabels"]["batch.kubernetes.io/controller-uid"] ==
                        j["metadata"]["uid"] for j in jobs)
    assert all(i["metadata"].get("managedFields") for i in items if i["kind"] not in UNMODELLED)
    assert all(ex["response"]["headers"].get("Audit-Id") for ex in exchanges)
    # paged: some list was answered with a continue token, which the next call sent back
    tokens = [ex["response"]["body"]["metadata"].get("continue") for ex in exchanges]
    assert any(tokens) and {t for t in tokens if t} <= {ex["request"]["query"].get("continue") for ex in exchanges}


def test_the_restricted_user_is_refused_podtemplates_only() -> None:
    exchanges = json.loads((DATA / "restricted" / "apiserver.json").read_text())["exchanges"]
    refused = {ex["request"]["path"] for ex in exchanges if ex["response"]["status"] == 403}
    assert refused == {"/api/v1/podtemplates"}
    (answer,) = [ex["response"]["body"] for ex in exchanges if ex["response"]["status"] == 403]
    assert answer["reason"] == "Forbidden" and "alice@example.com" in answer["message"]
