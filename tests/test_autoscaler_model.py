"""The sampled autoscaler of a simulation file: separate answer times, stock-outs, a provider's
shortage, the booking, and why they make a longer Kueue backoff pay."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from kueue_provreq.api import constants as c
from kueue_provreq.api.frozen import FrozenMap
from kueue_provreq.api.meta import ObjectMeta, Time
from kueue_provreq.api.provisioning import ProvisioningRequest, ProvisioningRequestSpec
from kueue_provreq.autoscaler import Answer
from kueue_provreq.manifests import ManifestErrors
from kueue_provreq.simulation import load_document, parse, simulate
from kueue_provreq.simulation.fleet import Draws, FleetModel, Stockout
from kueue_provreq.simulation.run import Report
from kueue_provreq.simulation.spec import Distribution, Stockouts
from kueue_provreq.world import World

from builders import EXAMPLES, queue_setup, simulation_file

GKE = "queued-provisioning.gke.io"
HOUR = 3600
STUDY = EXAMPLES / "teams-stockouts.yaml"


def fixed(seconds: int) -> Distribution:
    return Distribution("fixed", float(seconds))


def request(name: str, created: int, cls: str = GKE) -> ProvisioningRequest:
    return ProvisioningRequest(ObjectMeta(name=name, namespace="default", uid=name, generation=1,
                                          creation_timestamp=Time(created)),
                               ProvisioningRequestSpec(cls, FrozenMap({})))


def gke_file(tmp_path: Path, model: dict[str, Any], name: str = "gke.yaml", **changes: Any) -> Path:
    """The small simulation, its ProvisioningRequestConfig on a provider's class that ``model`` describes."""
    prc = ("{provisioningClassName: " + GKE + ", managedResources: [nvidia.com/gpu],"
           " retryStrategy: {backoffLimitCount: 2, backoffBaseSeconds: 60, backoffMaxSeconds: 1800}}")
    return simulation_file(tmp_path, name=name, setup={"manifests": list(yaml.safe_load_all(queue_setup(prc_spec=prc)))},
                           autoscaler={GKE: model}, **changes)


def fleet(tmp_path: Path, model: dict[str, Any]) -> FleetModel:
    sim = parse(load_document(gke_file(tmp_path, model)))
    return FleetModel(sim, World(sim.setup), Draws(sim.seed))


# --- stock-outs ---------------------------------------------------------------------------------


def test_stockouts_alternate_from_the_start_available_first() -> None:
    periods = Stockout(GKE, Stockouts(fixed(HOUR), fixed(HOUR // 2)), 1000, Draws(1))
    times = (0, HOUR - 1, HOUR, 1.5 * HOUR - 1, 1.5 * HOUR, 2.5 * HOUR, 3 * HOUR - 1, 3 * HOUR)
    assert [periods.at(1000 + int(t)) for t in times] == [False, False, True, True, False, True, True, False]
    assert not periods.at(0)  # before the run: nothing drawn, no stock-out


def test_the_periods_do_not_depend_on_the_order_of_the_questions() -> None:
    model = Stockouts(Distribution("exponential", 2.0 * HOUR), Distribution("lognormal", HOUR, 0.5))
    times = range(0, 48 * HOUR, 600)
    forward = [Stockout(GKE, model, 0, Draws(3)).at(t) for t in times]
    backward = Stockout(GKE, model, 0, Draws(3))
    assert [backward.at(t) for t in reversed(times)][::-1] == forward
    assert 0 < sum(forward) < len(forward)  # both kinds of period occur
    assert forward != [Stockout(GKE, model, 0, Draws(4)).at(t) for t in times]  # the seed decides


def test_tries_within_a_stock_out_fail_together_and_answer_after_failed_time(tmp_path: Path) -> None:
    model = fleet(tmp_path, {"provisionedTime": "10m", "failedTime": "2m", "failureProbability": 0.3,
                             "stockouts": {"available": "1h", "stockout": "1h"}})
    start = int(parse(load_document(gke_file(tmp_path, {}))).start)
    outcomes: dict[bool, list[bool]] = {True: [], False: []}
    for i in range(200):
        created = start + i * 180  # every 3 minutes for 10 hours
        pr = request(f"wl-{i}-check-1", created)
        first = model.first(pr)
        assert first is not None
        failed = model.resolve(pr, first, first.at).answer == Answer.FAIL
        assert first.at - created == (120 if failed else 600)
        outcomes[(created - start) // HOUR % 2 == 1].append(failed)
    assert all(outcomes[True])  # in a stock-out, every try fails
    assert 0 < sum(outcomes[False]) < len(outcomes[False]) / 2  # otherwise about 30% do, independently


def test_a_provider_shortage_can_keep_the_request_pending_and_ca_retries(tmp_path: Path) -> None:
    model = fleet(tmp_path, {"failureProbability": 1, "shortage": "Retry", "bookingTime": "30m"})
    pr = request("wl-check-1", 0)
    first = model.first(pr)
    assert first is not None
    decision = model.resolve(pr, first, first.at)
    assert (decision.answer, decision.booking_time) == (Answer.NOT_FOUND, 1800)
    assert model.retry(pr, 1, Time(100)).at == 160  # CA's own backoff: 1 min after the first try


def test_a_pending_shortage_never_reaches_kueue_s_retries(tmp_path: Path) -> None:
    stockouts = {"available": "30m", "stockout": "1h"}
    failing, pending = (simulate(parse(load_document(gke_file(
        tmp_path, {"stockouts": stockouts, "shortage": shortage}, name=f"{shortage}.yaml")), count=12)).summary
        for shortage in ("Fail", "Retry"))
    assert failing.requests.failed > 0 and failing.evictions.get("AdmissionCheck", 0) > 0
    assert (pending.requests.failed, pending.evictions.get("AdmissionCheck", 0), pending.deactivated) == (0, 0, 0)
    assert pending.requests.created == pending.workloads == pending.finished  # one attempt each, CA retried it


def test_unset_answer_times_are_the_provisioning_time(tmp_path: Path) -> None:
    sim = parse(load_document(gke_file(tmp_path, {"provisioningTime": "3m", "failedTime": "1m"})))
    model = sim.autoscaler[GKE]
    assert (model.provisioned_time, model.failed_time, model.stockouts) == (fixed(180), fixed(60), None)


@pytest.mark.parametrize(("cls", "model", "message"), [
    (c.CLASS_CHECK_CAPACITY, {"shortage": "Retry"},
     "autoscaler[check-capacity.autoscaling.x-k8s.io].shortage: only for a provider's class"),
    (GKE, {"shortage": "Wait"}, "shortage: unsupported value 'Wait'"),
    (GKE, {"stockouts": {"available": "0s", "stockout": {"uniform": {"min": "0s", "max": "0s"}}}},
     "autoscaler[queued-provisioning.gke.io].stockouts: available and stockout cannot both always be 0s"),
    (GKE, {"stockouts": {"available": "1h"}}, "stockouts.stockout: required value"),
    (GKE, {"bookingLossProbability": 2}, "bookingLossProbability: must be less than or equal to 1"),
])
def test_bad_autoscaler_fields_name_the_field(tmp_path: Path, cls: str, model: dict[str, Any], message: str) -> None:
    path = simulation_file(tmp_path, autoscaler={cls: model})
    with pytest.raises(ManifestErrors) as caught:
        parse(load_document(path))
    assert message in str(caught.value) and str(path) in str(caught.value)


# --- the booking --------------------------------------------------------------------------------


def test_pods_ready_after_the_booking_may_have_lost_the_capacity(tmp_path: Path) -> None:
    jobs = {"podsReadyTime": "20m", "runningTime": "10m"}
    kept = simulate(parse(load_document(gke_file(tmp_path, {}, jobs=jobs)), count=4)).summary
    lost = simulate(parse(load_document(gke_file(tmp_path, {"bookingLossProbability": 1}, name="lost.yaml",
                                                 jobs=jobs)), count=4)).summary
    assert (kept.finished, kept.requests.booking_expired) == (4, 4)  # 10 min booking, pods after 20
    assert (lost.finished, lost.admitted) == (0, 4)  # the pods wait for nodes that are gone
    longer = gke_file(tmp_path, {"bookingLossProbability": 1, "bookingTime": "30m"}, name="longer.yaml", jobs=jobs)
    assert simulate(parse(load_document(longer), count=4)).summary.finished == 4


def test_wait_for_pods_ready_evicts_the_workloads_that_lost_their_capacity(tmp_path: Path) -> None:
    (tmp_path / "kueue.yaml").write_text("apiVersion: config.kueue.x-k8s.io/v1beta2\nkind: Configuration\n"
                                         "waitForPodsReady: {timeout: 30m}\n")
    path = gke_file(tmp_path, {"bookingLossProbability": 1}, configuration="kueue.yaml",
                    jobs={"podsReadyTime": "20m", "runningTime": "10m"}, horizon="3h")
    s = simulate(parse(load_document(path), count=2)).summary
    assert s.finished == 0 and s.evictions.get("PodsReadyTimeout", 0) >= 2


# --- the mechanism the bundled study rests on --------------------------------------------------------


def study(base: int, count: int, seed: int) -> Report:
    sim = parse(load_document(STUDY), count=count, seed=seed, retry_strategy={"backoffBaseSeconds": base})
    return simulate(sim)


def test_with_base_0_retries_burn_out_inside_a_stock_out_and_a_longer_base_rides_it_out() -> None:
    runs = {base: [study(base, 40, seed) for seed in (1, 2, 3)] for base in (0, 300)}
    deactivated = {base: [r.summary.deactivated for r in reports] for base, reports in runs.items()}
    assert all(long <= short for long, short in zip(deactivated[300], deactivated[0], strict=True))
    assert sum(deactivated[300]) < sum(deactivated[0])
    for report in runs[0]:  # each deactivation ends a burst of failures inside one stock-out
        sim = report.simulation
        periods = Stockout(GKE, sim.autoscaler[GKE].stockouts, sim.start, Draws(sim.seed))  # type: ignore[arg-type]
        ends = [w.deactivated for w in report.workloads if w.deactivated is not None]  # seconds after the start
        assert ends and all(any(periods.at(sim.start + end - d) for d in range(180, 301, 10)) for end in ends)
