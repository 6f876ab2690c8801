"""``simulate``/``sweep --from DUMP``: a run that starts from a cluster's state."""

from __future__ import annotations

import json
import random
import statistics
from pathlib import Path

import pytest
import yaml
from kueue_provreq import cli
from kueue_provreq.api import constants as c
from kueue_provreq.api.config import Configuration
from kueue_provreq.api.evolve import evolve
from kueue_provreq.api.meta import Time
from kueue_provreq.api.objects import KubeObject
from kueue_provreq.api.provisioning import ProvisioningRequest, ProvisioningRequestConfig
from kueue_provreq.api.workload import Workload
from kueue_provreq.autoscaler import Answer, Decision, reconcile
from kueue_provreq.controllers.context import Context
from kueue_provreq.engine import Manager
from kueue_provreq.machines.status import set_cond
from kueue_provreq.manifests import dump_object, load_object
from kueue_provreq.simulation import load_document, parse, simulate
from kueue_provreq.simulation.existing import remaining
from kueue_provreq.simulation.spec import Cluster, Distribution, starting_world
from kueue_provreq.world import Update
from kueue_provreq.world_builder import build_world

from builders import SETUP, T0, job, objects, simulation_file

DUMPED = T0 + 300


def cluster_now() -> list[KubeObject]:
    """Six 2-GPU jobs on 8 GPUs of quota at T0: four reserve it; the first's request is
    provisioned at +10s and its pods ready at +20s; a dump at +300s (the objects as read back)."""
    world = build_world(objects(SETUP, *(job(f"j{i}", gpus=2) for i in range(6))), T0)
    manager = Manager(world, verify=False)
    manager.settle(Context(T0))
    first = min((o for o in world.objects(c.PROVISIONING_REQUEST) if isinstance(o, ProvisioningRequest)),
                key=lambda pr: pr.metadata.name)
    done = reconcile(first, Time(T0 + 10), Decision(Answer.PROVISION, Time(T0 + 10)))
    world.apply(Update(done.request, done.transitions))
    manager.settle(Context(Time(T0 + 10)))
    ref = first.metadata.controller_ref()
    assert ref is not None
    wl = world.get(c.WORKLOAD, first.metadata.namespace, ref.name)
    assert isinstance(wl, Workload) and wl.is_admitted()
    world.apply(Update(set_cond(wl, c.WORKLOAD_PODS_READY, c.TRUE, c.REASON_STARTED, c.MSG_PODS_READY, Time(T0 + 20))))
    manager.settle(Context(Time(T0 + 20)))
    return [load_object(dump_object(o)) for o in world]


@pytest.fixture
def dump(tmp_path: Path) -> Path:
    path = tmp_path / "dump.json"
    items = [dump_object(o) for o in cluster_now()]
    path.write_text(json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
    return path


@pytest.fixture
def sim_file(tmp_path: Path) -> Path:
    return simulation_file(tmp_path, jobs={"podsReadyTime": "30s", "runningTime": "20m"},
                           autoscaler={"check-capacity.autoscaling.x-k8s.io": {"provisioningTime": "1m"}})


def test_workloads_go_on_from_where_they_are(sim_file: Path) -> None:
    sim = parse(load_document(sim_file), count=2, cluster=Cluster(tuple(cluster_now()), Time(DUMPED)))
    assert sim.start == DUMPED
    report = simulate(sim, verify=True)
    records = {r.name.split("-")[1]: r for r in report.workloads if r.template == ""}
    assert len(records) == 6 and len(report.workloads) == 8
    assert all(r.created == -300 and r.outcome == "Finished" for r in records.values())
    running = records["j0"]
    # admitted at +10s, pods ready at +20s: 20 minutes of running, 280 s of them before the dump
    assert (running.quota_reserved, running.admitted, running.finished) == (-300, -290, 1200 - 280)
    assert running.attempts == 1 and report.summary.requests.created == 2 + 2  # the pending two and the arrivals
    waiting = [r for r in records.values() if r.quota_reserved == -300 and r is not running]
    assert len(waiting) == 3
    # their requests (created at T0) are answered at the dump: the model's 1m was due before it
    assert all(r.admitted == 0 for r in waiting)
    pending = [r for r in records.values() if r.quota_reserved is None or r.quota_reserved > 0]
    assert len(pending) == 2 and all(r.admitted is not None and r.admitted > 0 for r in pending)


def test_the_command_line_and_determinism(dump: Path, sim_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", str(sim_file), "--from", str(dump), "--workloads", "3", "-q", "-o", "json"]
    assert cli.main(argv) == 0
    first = capsys.readouterr()
    assert cli.main(argv) == 0
    assert capsys.readouterr().out == first.out  # byte-identical
    summary = json.loads(first.out)
    assert summary["workloads"] == 9 and summary["finished"] == 9
    assert "the run starts without" in first.err and "ClusterQueue cq" in first.err  # the file's setup replaces it


def test_sweep_from_a_dump_sets_the_cluster_s_configs(dump: Path, tmp_path: Path,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """The file's setup holds only the flavor: the cluster's ProvisioningRequestConfig is the one
    the sweep's retryStrategy settings change."""
    setup = [d for d in yaml.safe_load_all(SETUP) if d["kind"] == "ResourceFlavor"]
    path = simulation_file(tmp_path, "flavor-only.yaml", setup={"manifests": setup})
    assert cli.main(["sweep", str(path), "--from", str(dump), "--workloads", "2", "-q", "-j", "1",
                     "--replications", "1", "--set", "retryStrategy.backoffLimitCount=0,2", "-o", "json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["workloads"] for r in rows] == [8, 8]
    cluster = Cluster(tuple(cluster_now()), Time(DUMPED))
    sim = parse(load_document(path), cluster=cluster, retry_strategy={"backoffLimitCount": 0})
    [prc] = [o for o in sim.setup if isinstance(o, ProvisioningRequestConfig)]
    assert prc.spec.retry_strategy.backoff_limit_count == 0


def test_the_starting_world_leaves_out_what_is_over_and_keeps_jobs_implicit() -> None:
    objs = cluster_now()
    running = next(o for o in objs if isinstance(o, Workload) and o.is_admitted())
    finished = set_cond(running, c.WORKLOAD_FINISHED, c.TRUE, c.REASON_FINISHED_SUCCEEDED, "done", Time(DUMPED))
    late = objects(job("late", gpus=2))[0]  # a job created just before the dump: no Workload yet
    late = evolve(late, metadata=evolve(late.metadata, uid="00000000-0000-4000-8000-00000000beef",
                                                    creation_timestamp=Time(DUMPED)))
    cluster = [finished if o is running else o for o in objs] + [late]
    start = starting_world(cluster, (), {}, Configuration())
    kinds = [o.KIND for o in start]
    assert c.JOB not in kinds
    names = {o.metadata.name for o in start if isinstance(o, Workload)}
    assert running.metadata.name not in names and len(names) == 6  # five left, and the late job's
    assert not any(isinstance(o, ProvisioningRequest) and o.metadata.name.startswith(running.metadata.name)
                   for o in start)
    [made] = [o for o in start if isinstance(o, Workload) and "late" in o.metadata.name]
    assert made.metadata.creation_timestamp == DUMPED and made.spec.queue_name == "lq"


@pytest.mark.parametrize("distribution", [Distribution("lognormal", 1800, 0.5), Distribution("uniform", 600, 3000),
                                          Distribution("exponential", 1200)])
def test_a_remaining_running_time_is_drawn_given_the_time_run(distribution: Distribution) -> None:
    """elapsed + remaining has the distribution of the whole running time given that it is past
    elapsed: the same median as full draws kept when they are (rejection sampling)."""
    elapsed = 1500
    rng = random.Random(7)
    given = sorted(elapsed + remaining(distribution, elapsed, rng) for _ in range(4000))
    kept = sorted(x for x in (distribution.draw(rng) for _ in range(40000)) if x > elapsed)
    assert len(kept) > 1000
    assert abs(statistics.median(given) - statistics.median(kept)) < 0.05 * statistics.median(kept)
    assert min(given) >= elapsed


def test_a_live_cluster_starts_the_run_as_its_dump_does(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--kubeconfig`` reads the cluster as ``explain`` does (here the recorded healthy cluster,
    replayed at the HTTP boundary): the run is the one its dump gives."""
    from kueue_provreq.cluster import snapshot

    from apiserver import RecordedAPIServer
    from builders import cli as run_cli
    from recorded import DATA, at

    monkeypatch.setattr(snapshot, "PAGE_SIZE", 2)  # as recorded
    example = Path(__file__).parent.parent / "examples" / "simulations" / "team-a-from-now.yaml"
    common = ["simulate", str(example), "-q", "-o", "json", "--workloads", "4", "--at", at("healthy")]
    dumped = run_cli(*common, "--from", str(DATA / "healthy" / "dump.json"))
    with RecordedAPIServer.from_file(DATA / "healthy" / "apiserver.json") as server:
        live = run_cli(*common, "--kubeconfig", str(server.kubeconfig(tmp_path)))
    assert dumped.returncode == live.returncode == 0, (dumped.stderr, live.stderr)
    assert live.stdout == dumped.stdout and json.loads(live.stdout)["workloads"] == 8
