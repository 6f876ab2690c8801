"""The outputs shown in docs/cluster.rst are what the commands print.

Every ``.. code-block:: console`` of the page whose first line runs ``kueue-provreq`` is run
in process from the repository's root and its output (stderr, then stdout) compared with the
rest of the block; a last line ``...`` means "starts with".  A block preceded by the comment
``.. replayed: NAME at TIME`` runs against the recorded API server of tests/data/cluster/NAME,
with ``~/.kube/config`` standing for its kubeconfig and the clock at TIME (when the recording
was made).  A block preceded by ``.. not run here`` is skipped: it needs a live cluster.

When the commands' output changes on purpose, ``KUEUE_PROVREQ_UPDATE_DOCS=1 pytest
tests/test_docs_cluster.py`` writes what they print now into the page (then read the diff).
"""

from __future__ import annotations

import os
import re
import shlex
from pathlib import Path

import attrs
import pytest
from kueue_provreq import cli
from kueue_provreq.cluster import snapshot
from kueue_provreq.manifests.codec import parse_time

from apiserver import RecordedAPIServer

ROOT = Path(__file__).parents[1]
PAGE = ROOT / "docs" / "cluster.rst"
DATA = ROOT / "tests" / "data" / "cluster"


@attrs.frozen
class Block:
    line: int
    command: str
    output: tuple[str, ...]
    marker: str


_BLOCK = re.compile(r"((?:^\.\. [^\n]*\n\n)?)^\.\. code-block:: console\n\n((?:^   [^\n]*\n|^\n)+)", re.M)


def blocks() -> list[Block]:
    text = PAGE.read_text()
    found = []
    for m in _BLOCK.finditer(text):
        body = [line[3:] for line in m.group(2).rstrip("\n").split("\n")]
        if not body or not body[0].startswith("$ kueue-provreq "):
            continue
        marker = m.group(1).strip()[3:] if m.group(1) else ""
        found.append(Block(text[:m.start()].count("\n") + 1, body[0][2:], tuple(body[1:]), marker))
    return found


def run(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> str:
    argv = shlex.split(block.command)[1:]
    monkeypatch.chdir(ROOT)
    if not block.marker.startswith("replayed: "):
        cli.main(argv)
        out, err = capsys.readouterr()
        return err + out
    name, _, at = block.marker.removeprefix("replayed: ").partition(" at ")
    monkeypatch.setattr(snapshot, "PAGE_SIZE", 2)  # the recordings were made with limit=2
    monkeypatch.setattr(cli.options.time, "time", lambda: float(parse_time(at)))
    with RecordedAPIServer.from_file(DATA / name / "apiserver.json") as server:
        kubeconfig = str(server.kubeconfig(tmp_path))
        cli.main([kubeconfig if a == "~/.kube/config" else a for a in argv])
    out, err = capsys.readouterr()
    return err + out


def _rewrite(block: Block, output: list[str]) -> None:
    old = "\n".join(f"   {line}".rstrip() for line in [f"$ {block.command}", *block.output]) + "\n"
    new = "\n".join(f"   {line}".rstrip() for line in [f"$ {block.command}", *output]) + "\n"
    text = PAGE.read_text()
    assert text.count(old) == 1, block.line
    PAGE.write_text(text.replace(old, new))


@pytest.mark.parametrize("block", blocks(), ids=lambda b: f"line {b.line}")
def test_shown_output_is_the_commands_output(block: Block, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    if block.marker.startswith("not run here"):
        pytest.skip(block.marker)
    got = run(block, tmp_path, monkeypatch, capsys).rstrip("\n").split("\n")
    want = list(block.output)
    if os.environ.get("KUEUE_PROVREQ_UPDATE_DOCS") and got != want and not (want and want[-1] == "..."):
        _rewrite(block, got)
        return
    if want and want[-1] == "...":
        assert got[:len(want) - 1] == want[:-1]
    else:
        assert got == want


def test_the_page_shows_commands() -> None:
    kinds = {b.marker.split(":")[0] for b in blocks()}
    assert {"", "replayed"} <= kinds
