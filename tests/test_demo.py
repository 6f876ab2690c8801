"""``make demo``'s cluster dump (examples/demo/cluster/dump.yaml) is what the model makes of the
upstream sample: the objects of examples/demo/ created at 09:00, every controller settled (the
Job's Workload holding quota, its ProvisioningRequest unanswered).  Run this file to write it
again after a change of the model: ``.venv/bin/python tests/test_demo.py``."""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path
from typing import Any

import yaml
from kueue_provreq.api.evolve import evolve
from kueue_provreq.engine import Manager
from kueue_provreq.manifests import dump_object
from kueue_provreq.manifests.inputs import load_inputs
from kueue_provreq.timestamps import to_time
from kueue_provreq.world import World

DEMO = Path(__file__).parent.parent / "examples" / "demo"
DUMP = DEMO / "cluster" / "dump.yaml"
CREATED = "2024-01-01T09:00:00Z"
HEADER = ("# What `kubectl get -A -o yaml` of the Kueue objects, the Job and the ProvisioningRequest would\n"
          "# show right after `kubectl create -f sample-job.yaml` at 09:00 on the setup of\n"
          "# ../provisioning-setup.yaml: written by tests/test_demo.py (run it to write it again).\n")


def uid(kind: str, namespace: str, name: str) -> str:
    digest = hashlib.sha1(f"{kind}/{namespace}/{name}".encode()).hexdigest()
    return f"{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def dump() -> dict[str, Any]:
    now = to_time(CREATED)
    objects = load_inputs([str(DEMO / "provisioning-setup.yaml"), str(DEMO / "sample-job.yaml")]).objects
    world = World([evolve(o, metadata=evolve(
        o.metadata, uid=uid(o.KIND, o.metadata.namespace, o.metadata.name), creation_timestamp=now))
        for o in objects])
    Manager(world).settle(now)
    return {"apiVersion": "v1", "kind": "List", "items": [dump_object(o) for o in world]}


def test_the_demo_dump_is_the_models_own() -> None:
    assert yaml.safe_load(DUMP.read_text(encoding="utf-8")) == dump(), f"run {__file__} to write it again"


if __name__ == "__main__":
    DUMP.write_text(HEADER + yaml.safe_dump(dump(), sort_keys=False), encoding="utf-8")
    sys.exit(0)
