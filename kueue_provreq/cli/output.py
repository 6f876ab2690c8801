"""What commands print besides their own tables: data as YAML or JSON, and notes on stderr."""

from __future__ import annotations

import json
import sys
from typing import Any

import yaml

from kueue_provreq.cli.options import PROG


def print_data(data: Any, output: str) -> None:
    """``-o json`` or ``-o yaml``."""
    if output == "json":
        print(json.dumps(data, indent=2))
    else:
        print(yaml.safe_dump(data, sort_keys=False, allow_unicode=True), end="")


def note(kind: str, line: object) -> None:
    """``kueue-provreq: warning: ...`` (or ``error``) on standard error."""
    print(f"{PROG}: {kind}: {line}", file=sys.stderr)
