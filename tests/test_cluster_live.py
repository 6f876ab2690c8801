"""Against a real cluster, opt-in: set KUEUE_PROVREQ_TEST_KUBECONFIG (and optionally
KUEUE_PROVREQ_TEST_CONTEXT) to a test cluster with Kueue installed.  Read-only: list calls."""

from __future__ import annotations

import os
import time

import pytest
from kueue_provreq import cli
from kueue_provreq.api.meta import Time
from kueue_provreq.audit import audit
from kueue_provreq.cluster import client, snapshot

KUBECONFIG = os.environ.get("KUEUE_PROVREQ_TEST_KUBECONFIG", "")
CONTEXT = os.environ.get("KUEUE_PROVREQ_TEST_CONTEXT") or None

pytestmark = pytest.mark.skipif(not KUBECONFIG, reason="no real cluster: set KUEUE_PROVREQ_TEST_KUBECONFIG "
                                                       "to a kubeconfig of a test cluster with Kueue to run it")


def test_every_object_of_a_real_cluster_is_read_and_judged() -> None:
    with client.connect(KUBECONFIG, CONTEXT) as api:
        snap = snapshot.read(api)
    objects, _ = snapshot.to_objects(snap.documents, snap.source)  # the model reads every object Kueue wrote
    assert len(objects) == len(snap.documents)
    report = audit(objects, Time(int(time.time())), unread=snap.unread)
    assert all(f.rule and f.object and f.message for f in report.findings)


def test_commands_run_on_a_real_cluster(capsys: pytest.CaptureFixture[str]) -> None:
    where = ["--kubeconfig", KUBECONFIG, *(["--context", CONTEXT] if CONTEXT else [])]
    assert cli.main(["explain", *where]) == 0
    assert cli.main(["audit", *where, "-o", "json"]) in (0, 1)
    capsys.readouterr()
