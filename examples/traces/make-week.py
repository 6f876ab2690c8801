"""Writes ``week.jsonl``: a stand-in for a week's recording (``kueue-provreq record``) of three
teams' GPU training jobs behind a queued-provisioning ProvisioningRequest check, made from
known values so the docs can show what ``calibrate`` recovers (``docs/what-if.rst``).

Monday 2024-01-01 to the next Monday; jobs arrive on weekdays between 08:00 and 20:00 (about
three an hour, shared by the teams), each asking for 8 GPUs and running 30 minutes to 4 hours.
The zone's GPUs come and go: available for about 3 hours (exponential), then out of stock
for about an hour.  Each attempt is answered after a lognormal delay: provisioned after 6
minutes (median, sigma 0.6) when there is capacity, else failed after 4 minutes (sigma 0.3),
the time CA looks;
besides stock-outs 10% of attempts fail.  Kueue retries after 60 s doubling, at most 5
retries.  Run from the repository root: ``python examples/traces/make-week.py``.
"""

from __future__ import annotations

import math
import random
from pathlib import Path

from kueue_provreq import trace as t

START = 1_704_067_200  # Monday 2024-01-01T00:00:00Z
WEEK = 7 * 24 * 3600
CLASS = "queued-provisioning.gke.io"
TEAMS = ("team-a", "team-b", "team-c")
PODSETS = ({"name": "main", "count": 1, "template": {"spec": {"restartPolicy": "Never", "containers": [
    {"name": "trainer", "image": "trainer:latest", "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}}},)


def stockouts(rng: random.Random) -> list[tuple[float, float]]:
    out, now = [], 0.0
    while now < WEEK + 86400:
        now += rng.expovariate(1 / (3 * 3600))
        length = rng.expovariate(1 / 3600)
        out.append((now, now + length))
        now += length
    return out


def main() -> None:
    rng = random.Random(23)
    gone = stockouts(rng)
    records: list[t.Record] = [t.Window(START, START + WEEK)]
    at, i = 0.0, 0
    while True:
        at += rng.expovariate(3 / 3600)
        if at >= WEEK:
            break
        day, hour = divmod(at, 86400)
        if day >= 5 or not 8 * 3600 <= hour < 20 * 3600:
            continue
        i += 1
        team = TEAMS[rng.randrange(3)]
        name = f"job-train-{i:04d}"
        created = START + round(at)
        running = round(min(4 * 3600, max(1800, rng.lognormvariate(math.log(5400), 0.6))))
        records.append(t.Arrival(created, team, name, "training", 0, PODSETS))
        now = created + 1
        for attempt in range(1, 7):
            # CA looks for capacity when a no-capacity answer would come; found, provisioning takes longer
            no_capacity = rng.lognormvariate(math.log(240), 0.3)
            provisioned = rng.lognormvariate(math.log(360), 0.6)
            fails = rng.random() < 0.1 or any(s <= now - START + no_capacity < e for s, e in gone)
            answered = now + round(no_capacity if fails else provisioned)
            records.append(t.Attempt(now, team, f"{name}-gpu-capacity-{attempt}", name, CLASS,
                                     t.FAILED if fails else t.PROVISIONED, answered,
                                     "CapacityIsNotFound" if fails else "CapacityIsProvisioned"))
            if not fails:
                ready = answered + rng.randint(30, 90)
                records.append(t.Finish(ready + running, team, name, t.FINISHED, running))
                break
            if attempt == 6:
                records.append(t.Finish(answered, team, name, t.DEACTIVATED))
                break
            now = answered + min(60 * 2 ** (attempt - 1), 3600)
    records.sort(key=lambda r: r.start if isinstance(r, t.Window) else r.time)
    (Path(__file__).parent / "week.jsonl").write_text(t.dumps(records), encoding="utf-8")


if __name__ == "__main__":
    main()
