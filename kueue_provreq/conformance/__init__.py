"""The conformance runner: scenario files (docs/conformance-format.md) judged against the model.

An edge package: it reads YAML and files; the core never imports it.
"""

from kueue_provreq.conformance.runner import (
           Observer,
           Outcome,
           Run,
           collect,
           conform,
           load_scenarios,
)
from kueue_provreq.conformance.scenario import Scenario, ScenarioError, parse_scenario

__all__ = ["Observer", "Outcome", "Run", "Scenario", "ScenarioError", "collect", "conform", "load_scenarios",
           "parse_scenario"]
