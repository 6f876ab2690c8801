"""``.. kueue-provreq:: ARGS``: run a ``kueue-provreq`` command while the docs build, show what
it printed, and include the PNG plots it wrote.

The what-if pages show real output: the command runs in-process (``cli.main``) from the
repository root each time the HTML is built, so the page can never drift from the code.  The
runs are kept small (a few seconds in all).  ``{out}`` in ARGS is a folder under
``docs/_generated/`` (ignored by git and by Sphinx' source search); list the PNGs to show
with ``:images:``.  Other builders (the doctest run) skip the command.  A command that exits
with a non-zero status fails the build.
"""

from __future__ import annotations

import contextlib
import io
import os
import shlex
import shutil
from pathlib import Path
from typing import Any

from docutils import nodes
from docutils.parsers.rst import directives
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

GENERATED = "_generated"


class CommandOutput(SphinxDirective):
    required_arguments = 1
    final_argument_whitespace = True
    option_spec = {"images": directives.unchanged, "out": directives.unchanged}

    def run(self) -> list[nodes.Node]:
        if self.env.app.builder.name != "html":
            return []
        srcdir = Path(self.env.srcdir)
        name = self.options.get("out", "out")
        out = srcdir / GENERATED / name
        shutil.rmtree(out, ignore_errors=True)  # each build writes its outputs afresh (--out refuses a full folder)
        argv = [a.replace("{out}", str(out)) for a in shlex.split(self.arguments[0])]
        shown = self.arguments[0].replace("{out}", f"{name}/")
        from kueue_provreq import cli

        stdout, stderr = io.StringIO(), io.StringIO()
        cwd = os.getcwd()
        try:
            os.chdir(srcdir.parent)
            with contextlib.redirect_stdout(stdout), contextlib.redirect_stderr(stderr):
                status = cli.main(argv)
        finally:
            os.chdir(cwd)
        if status != 0:
            raise self.error(f"kueue-provreq {shown} exited with {status}: {stderr.getvalue().strip()}")
        lines = [".. code-block:: console", "", f"   $ kueue-provreq {shown}"]
        lines += [f"   {line}" for line in stdout.getvalue().splitlines()]
        for image in self.options.get("images", "").split():
            lines += ["", f".. image:: /{GENERATED}/{name}/{image}", f"   :alt: {image}"]
        container = nodes.container()
        self.state.nested_parse(StringList(lines, source=self.get_source_info()[0]), self.content_offset, container)
        return list(container.children)


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("kueue-provreq", CommandOutput)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
