"""The documentation covers the package: every module is on one page of the API reference, and
the page of what the model leaves out is linked from the README."""

from __future__ import annotations

import pkgutil
import re
from pathlib import Path

import kueue_provreq

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


def _modules() -> set[str]:
    found = {m.name for m in pkgutil.walk_packages(kueue_provreq.__path__, "kueue_provreq.")}
    return {"kueue_provreq"} | {m for m in found if not m.endswith(".__main__")}


def test_every_module_is_in_the_api_reference() -> None:
    # the reference is api.rst and the pages its table of contents names, one per group of modules
    index = (DOCS / "api.rst").read_text()
    pages = re.findall(r"^   (api/\S+)$", index, re.MULTILINE)
    assert sorted(pages) == sorted(f"api/{p.stem}" for p in (DOCS / "api").glob("*.rst"))
    listed = [m for text in [index] + [(DOCS / f"{p}.rst").read_text() for p in pages]
              for m in re.findall(r"^\.\. automodule:: (\S+)$", text, re.MULTILINE)]
    assert len(listed) == len(set(listed)), "a module is listed twice"
    assert set(listed) == _modules()


def test_the_readme_links_the_page_of_what_is_not_modelled() -> None:
    assert (DOCS / "not-modelled.rst").is_file()
    assert "docs/not-modelled.rst" in (ROOT / "README.md").read_text()
