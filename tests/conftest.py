"""Shared test settings: hypothesis profiles and the location of upstream test data."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

#: CI keeps hypothesis' built-in deterministic profile (derandomize, no database)
#: and raises the example count; `thorough` is for long local runs.
settings.register_profile("ci", settings.get_profile("ci"), max_examples=200)
settings.register_profile("dev", max_examples=50, deadline=None)
settings.register_profile("thorough", max_examples=10_000, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci" if os.environ.get("CI") else "dev"))

UPSTREAM = Path(__file__).resolve().parents[2] / "shared" / "upstream"


@pytest.fixture
def upstream() -> Path:
    """../shared/upstream (CRDs and examples as test data); absent in a user's fresh clone."""
    if not UPSTREAM.is_dir():
        pytest.skip(f"upstream test data not found at {UPSTREAM} (it lives beside the repo, "
                    "in ../shared/upstream, and is not part of a clone)")
    return UPSTREAM
