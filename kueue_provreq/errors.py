"""The one family every error this library raises on purpose belongs to.

Callers that embed the library (a controller, a CI job running the conformance suite) catch
:class:`KueueProvreqError` to tell "the model refused this" from a bug; the CLI turns any of
them into one line on stderr and exit status 2 (bad input) or 1 (a verdict).
"""

from __future__ import annotations


class KueueProvreqError(Exception):
    """Base of every deliberate error: illegal transitions, unsettled worlds, bad manifests,
    bad scenarios, bad command lines."""
