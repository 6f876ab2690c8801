"""The core is sans-IO: importing it must not pull in a cluster client, YAML, a clock
reader or a random source (time and jitter come in as arguments)."""

import subprocess
import sys

CORE = [
    "kueue_provreq.api.objects", "kueue_provreq.api.config", "kueue_provreq.machines",
    "kueue_provreq.machines.phases", "kueue_provreq.world", "kueue_provreq.engine",
    "kueue_provreq.controllers.provisioning", "kueue_provreq.controllers.workload",
    "kueue_provreq.controllers.job", "kueue_provreq.controllers.scheduler",
    "kueue_provreq.controllers.admissioncheck", "kueue_provreq.controllers.clusterqueue",
]
FORBIDDEN = ["kubernetes", "kubernetes_validate", "jsonschema", "urllib3", "yaml", "random", "datetime",
             "kueue_provreq.manifests", "kueue_provreq.conformance", "kueue_provreq.cli", "kueue_provreq.cluster",
             "kueue_provreq.audit", "kueue_provreq.waits"]


def test_core_imports_no_io_clock_or_randomness() -> None:
    code = (
        "import sys\n"
        f"before = set(sys.modules)\n"
        f"for m in {CORE!r}: __import__(m)\n"
        f"bad = [m for m in {FORBIDDEN!r} if m in sys.modules and m not in before]\n"
        "print(','.join(bad))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "", f"core imported: {out.stdout.strip()}"


def test_core_source_never_reads_the_clock() -> None:
    import pathlib

    import kueue_provreq.world

    root = pathlib.Path(kueue_provreq.world.__file__).parent
    edges = {"manifests", "conformance", "cli.py", "__main__.py", "diagrams.py", "explore"}
    offenders = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if rel.parts[0] in edges:
            continue
        text = path.read_text()
        for needle in ("time.time(", "time.monotonic(", "datetime.now(", "random.", "print("):
            if needle in text:
                offenders.append(f"{rel}: {needle}")
    assert offenders == []


def test_the_cluster_client_is_imported_only_when_a_cluster_is_read() -> None:
    """The ``cluster`` extra is optional and slow to import: the CLI, explain, audit and the
    cluster package itself load without it."""
    code = (
        "import sys\n"
        "import kueue_provreq.cli, kueue_provreq.audit, kueue_provreq.explain, kueue_provreq.waits\n"
        "import kueue_provreq.cluster, kueue_provreq.cluster.resources\n"
        "print(','.join(m for m in ('kubernetes', 'urllib3') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
