"""The conformance runner on small inline scenarios.

These tests use only the steps the runner carries out itself (apply, patch, delete, advance,
autoscaler, setQuotaReservation, expect) or a stand-in controller registered for the test,
so they judge the runner, not the controllers.  Scenarios that need the real controllers
are in test_conformance_end_to_end.py.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kueue_provreq import engine
from kueue_provreq.api import constants as c
from kueue_provreq.api.objects import Key, KubeObject
from kueue_provreq.api.podtemplate import PodTemplate  # noqa: F401  (placeholder, replaced below)
