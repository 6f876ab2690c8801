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
    "kueue_provreq.controllers.integrations", "kueue_provreq.controllers.podsets",
    "kueue_provreq.controllers.context", "kueue_provreq.controllers.registry", "kueue_provreq.world_builder",
]
FORBIDDEN = ["kubernetes", "kubernetes_validate", "jsonschema", "urllib3", "yaml", "random", "datetime",
             "kueue_provreq.manifests", "kueue_provreq.conformance", "kueue_provreq.cli", "kueue_provreq.timestamps",
             "kueue_provreq.explain", "kueue_provreq.cluster", "kueue_provreq.audit", "kueue_provreq.waits"]


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


def test_a_context_in_seconds_imports_no_datetime() -> None:
    """Text and ``datetime`` are read by the edge module ``kueue_provreq.timestamps``, imported
    only when a time comes in one of those forms."""
    code = (
        "import sys\n"
        "from kueue_provreq.controllers.context import Context\n"
        "from kueue_provreq.engine import Manager\n"
        "from kueue_provreq.world import World\n"
        "Manager(World()).settle(Context(now=1_704_067_200))\n"
        "print(','.join(m for m in ('datetime', 'kueue_provreq.timestamps') if m in sys.modules))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""


def test_core_source_never_reads_the_clock() -> None:
    """The core's floors and the shared rooms above them (``tests/test_layering.py`` places every
    module) name no clock, no random draw and no print, not even in a lazy branch: only the edges
    and the command line talk to the world."""
    from test_layering import CORE_FLOORS, modules, placed

    offenders = []
    for name, path in modules().items():
        if placed(name)[0] not in (*CORE_FLOORS, "shared"):
            continue
        text = path.read_text()
        for needle in ("time.time(", "time.monotonic(", "datetime.now(", "random.", "print("):
            if needle in text:
                offenders.append(f"{name}: {needle}")
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


def _imported_by(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    probe = f"import sys\n{code}\nprint(','.join(sorted(sys.modules)))\n"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    return set(out.stdout.strip().split(","))


HEAVY = {"kueue_provreq.simulation", "matplotlib", "dask", "distributed", "tqdm"}


def test_the_package_and_the_cli_load_no_simulation_plotting_or_dask() -> None:
    assert not HEAVY & _imported_by("import kueue_provreq")
    assert not HEAVY & _imported_by("from kueue_provreq import cli; cli.build_parser()")


def test_the_simulation_loads_matplotlib_and_dask_only_when_asked() -> None:
    loaded = _imported_by("import kueue_provreq.simulation")
    assert "kueue_provreq.simulation.run" in loaded
    assert not {"matplotlib", "dask", "distributed", "tqdm"} & loaded


def test_the_simulation_draws_only_from_seeded_generators_and_reads_no_clock() -> None:
    import pathlib
    import re

    import kueue_provreq.simulation

    root = pathlib.Path(kueue_provreq.simulation.__file__).parent
    offenders = []
    for path in root.glob("*.py"):
        text = path.read_text()
        for m in re.finditer(r"\brandom\.(\w+)", text):
            if m.group(1) != "Random":
                offenders.append(f"{path.name}: random.{m.group(1)}")
        for needle in ("time.time(", "time.monotonic(", "datetime.now(", "os.urandom("):
            if needle in text:
                offenders.append(f"{path.name}: {needle}")
    assert offenders == []
