"""How long reading manifests takes, measured in one process.

(a) the first Job of a process: reading the pinned Kubernetes schemas, building the nodes the
    Job needs, checking it;
(b) each further Job and each further Workload (strict validation, defaults, decoding);
(c) a ``kubectl get -o yaml``-style List of N Jobs and N Workloads through ``load_inputs``
    (YAML parsing included), for N in ``--sizes``.

Usage: python benchmarks/bench_inputs.py [--sizes 100,1000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import copy
import io
import sys
import time
from typing import Any

import yaml
from kueue_provreq.manifests import check_object
from kueue_provreq.manifests.inputs import load_inputs

JOB: dict[str, Any] = {
    "apiVersion": "batch/v1", "kind": "Job",
    "metadata": {"name": "j", "namespace": "default", "labels": {"kueue.x-k8s.io/queue-name": "lq"}},
    "spec": {"parallelism": 3, "completions": 3, "suspend": True, "template": {"spec": {
        "containers": [{"name": "c", "image": "agnhost", "args": ["pause"],
                        "resources": {"requests": {"cpu": "100m", "memory": "100Mi"},
                                      "limits": {"nvidia.com/gpu": 1}}}],
        "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
        "restartPolicy": "Never"}}},
}
WORKLOAD: dict[str, Any] = {
    "apiVersion": "kueue.x-k8s.io/v1beta2", "kind": "Workload",
    "metadata": {"name": "w", "namespace": "default"},
    "spec": {"queueName": "lq", "podSets": [{"name": "main", "count": 3,
                                             "template": JOB["spec"]["template"]}]},
}


def best(fn: Any, repeat: int) -> float:
    """The fastest of ``repeat`` timed calls, in seconds (the machine is noisy)."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000")
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)

    start = time.perf_counter()
    assert check_object(JOB).obj is not None
    print(f"(a) first Job of the process: {1000 * (time.perf_counter() - start):.1f} ms")
    for name, doc in (("Job", JOB), ("Workload", WORKLOAD)):
        per = best(lambda doc=doc: [check_object(doc) for _ in range(200)], args.repeat) / 200
        print(f"(b) each further {name}: {1000 * per:.2f} ms")
    for n in map(int, args.sizes.split(",")):
        items = []
        for i in range(n):
            for doc in (JOB, WORKLOAD):
                item = copy.deepcopy(doc)
                item["metadata"]["name"] = f"{doc['metadata']['name']}-{i}"
                items.append(item)
        text = yaml.safe_dump({"apiVersion": "v1", "kind": "List", "items": items})
        seconds = best(lambda text=text: load_inputs(["-"], stdin=io.StringIO(text)), args.repeat)
        print(f"(c) List of {n} Jobs + {n} Workloads ({len(text) // 1024} KiB): {seconds:.2f} s, "
              f"{1e6 * seconds / (2 * n):.0f} µs per object")
    return 0


if __name__ == "__main__":
    sys.exit(main())
