"""How reading and judging a cluster scales: the troubled sample cluster (tests/data/cluster)
copied N times over as many namespaces, then

(a) the dump's objects decoded into models (``snapshot.to_objects``, what a dump and a live
    read both go through);
(b) ``audit`` over them;
(c) explain's ``WAITS FOR`` section over them;
(d) the whole ``explain`` report (its NEXT section reconciles every object once);

each best of ``--repeat``, with the cost per workload, so that the ratio between sizes shows
whether a step grows faster than the cluster; and, first, what the optional client costs at
start-up: a fresh interpreter importing the CLI (which must not load it) against one that
also loads it as ``--kubeconfig`` does.

Usage: python benchmarks/bench_cluster.py [--sizes 10,100,1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from kueue_provreq.api.meta import Time
from kueue_provreq.audit import audit
from kueue_provreq.cluster.snapshot import to_objects
from kueue_provreq.controllers.context import Context
from kueue_provreq.explain import explain
from kueue_provreq.manifests.codec import parse_time
from kueue_provreq.waits import waits
from kueue_provreq.world import World

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_inputs import best  # noqa: E402  (one timing helper for the benchmarks)

DUMP = Path(__file__).parents[1] / "tests" / "data" / "cluster" / "troubled" / "dump.json"
UNMODELLED = {"Pod", "Event", "Service", "Deployment", "ConfigMap"}
AT = Time(parse_time("2026-11-20T10:00:00Z"))


def cluster(copies: int) -> list[dict[str, Any]]:
    """The sample's namespaced objects once per namespace ``ml-<i>`` (uids made unique), and its
    cluster-scoped configuration once."""
    items = [i for i in json.loads(DUMP.read_text())["items"] if i["kind"] not in UNMODELLED]
    shared = [i for i in items if not i["metadata"].get("namespace")]
    scoped = [i for i in items if i["metadata"].get("namespace")]
    out = list(shared)
    for n in range(copies):
        for item in scoped:
            obj = copy.deepcopy(item)
            meta = obj["metadata"]
            meta["namespace"] = f"ml-{n}"
            meta["uid"] = f"{n:08x}{meta['uid'][8:]}"
            for ref in meta.get("ownerReferences", ()):
                ref["uid"] = f"{n:08x}{ref['uid'][8:]}"
            out.append(obj)
    return out


def import_seconds(code: str, repeat: int) -> float:
    return best(lambda: subprocess.run([sys.executable, "-c", code], check=True), repeat)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="10,100,1000", help="copies of the sample cluster (comma-separated)")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    bare = import_seconds("import kueue_provreq.cli", args.repeat)
    client = import_seconds("import kueue_provreq.cli; from kueue_provreq.cluster import client; "
                            "client._import_client(); import kubernetes.client", args.repeat)
    print(f"start-up: CLI {bare:.2f}s, CLI + Kubernetes client {client:.2f}s (best of {args.repeat})")
    print(f"{'copies':>7} {'workloads':>9} {'objects':>8}  {'decode':>8} {'audit':>8} {'waits':>8} {'explain':>8}  "
          f"{'audit/workload':>14} {'explain/workload':>16}")
    for copies in map(int, args.sizes.split(",")):
        docs = cluster(copies)
        objects, _ = to_objects(docs)
        workloads = sum(1 for o in objects if o.KIND == "Workload")
        decode = best(lambda docs=docs: to_objects(docs), args.repeat)
        judged = best(lambda objects=objects: audit(objects, AT), args.repeat)
        waited = best(lambda objects=objects: waits(World(objects), Context(now=AT)), args.repeat)
        told = best(lambda objects=objects: explain(objects, AT), args.repeat)
        print(f"{copies:>7} {workloads:>9} {len(objects):>8}  {decode:>7.3f}s {judged:>7.3f}s {waited:>7.3f}s "
              f"{told:>7.3f}s  {judged / workloads * 1e6:>12.0f}us {told / workloads * 1e6:>14.0f}us")


if __name__ == "__main__":
    main()
