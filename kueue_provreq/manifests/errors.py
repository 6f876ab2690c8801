"""The one error type raised where manifests enter the library.

Everything past this edge trusts its typed models, so a bad manifest must be
reported here, in terms a user can act on: which object, which field, why,
and (when the input came from a file) where in the file.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from kueue_provreq.errors import KueueProvreqError


class ManifestError(KueueProvreqError, ValueError):
    """Bad input: ``[source: ]Kind ns/name: field.path: reason``.

    ``obj`` names the object (``Workload default/wl``), ``path`` is the field
    path inside it (``spec.podSets[0].count``), ``source`` is ``file:line``.
    Each is ``""`` when unknown.
    """

    def __init__(self, reason: str, *, path: str = "", obj: str = "", source: str = "") -> None:
        self.reason = reason
        self.path = path
        self.obj = obj
        self.source = source
        super().__init__(str(self))

    def __str__(self) -> str:
        return ": ".join(part for part in (self.source, self.obj, self.path, self.reason) if part)

    def within(self, *, obj: str = "", source: str = "", locate: Callable[[str], str] | None = None) -> ManifestError:
        """The same error with context the raiser did not know: the object it
        belongs to and the position in the file it came from (``locate`` finds it from the path)."""
        return ManifestError(self.reason, path=self.path, obj=self.obj or obj,
                             source=self.source or (locate(self.path) if locate else source))


class ManifestErrors(ManifestError):
    """Several problems of one input: it reads as the first, ``errors`` holds them all."""

    def __init__(self, errors: Sequence[ManifestError]) -> None:
        self.errors = tuple(errors)
        first = self.errors[0]
        super().__init__(first.reason, path=first.path, obj=first.obj, source=first.source)

    def within(self, *, obj: str = "", source: str = "", locate: Callable[[str], str] | None = None) -> ManifestError:
        """Each error with the context its raiser did not know (``locate`` finds the source of a path)."""
        return ManifestErrors([e.within(obj=obj, source=locate(e.path) if locate else source)
                               for e in self.errors])
