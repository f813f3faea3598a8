"""The one exception tree of knowtk.

    KnowtkError                    every refusal; carries ``.code``
     ├── InvalidArgument           (also ValueError) a bad argument: ``.argument``, ``.allowed``
     │    └── UnexpectedArgument   (also TypeError) an argument this call does not take
     ├── StoreUnavailable          the store folder cannot be read: ``.path``
     ├── StoreChanged              the store changed between two reads of one answer: ask again
     │    └── RecordChanged        (``knowtk.state``) a record's file changed since it was read: what it
     │                             reads back (its frontmatter) is gone; take the record again
     ├── StateError                ``.knowtk/state.sqlite`` is not a knowtk state we can trust: ``.path``
     │    └── SafeguardLoss        safeguards were lost that neither state.sqlite nor the journal gives back:
     │                             refused until accepted (``knowtk state accept-loss`` catches only this)
     ├── ScanLimitExceeded         the store is larger than the scan allows: ``.limit``, ``.value``
     ├── RecordNotFound            (also LookupError) ``knowl_query``/``explain`` of an unknown id: ``.id``
     ├── MissingDependency         (also ImportError) an optional package this call needs: ``.package``,
     │                             ``.extra`` (``pip install knowtk[extra]``)
     ├── PublicationConflict       a write found the file other than the caller read it: ``.path``,
     │                             ``.expected``, ``.actual`` (the two SHA-256); nothing was written
     ├── IdentityConflict          ``create`` of an id that a file of the store already claims: ``.id``, ``.path``
     ├── NoKnownPast               ``store.at(when)`` before any past knowtk can answer: ``.instant``, ``.earliest``
     ├── PastIsReadOnly            a write asked of ``store.at(when)``, a view of the past
     └── GoldSetError              (also ValueError; ``knowtk.lab.goldset``) a gold set that cannot be
                                   used as written: ``.path``, ``.line``, ``.case``, ``.field``

A failure always raises one of these; knowtk never answers a failed
operation with an empty or partial result. The one reported (not raised)
failure is the keyword index being unavailable, which the contract shapes
as ``index.state == "unavailable"`` with ``total: null``. ``GoldSetError``
lives with the query lab, the one part that reads gold sets.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = [
    "IdentityConflict",
    "InvalidArgument",
    "KnowtkError",
    "MissingDependency",
    "NoKnownPast",
    "PastIsReadOnly",
    "PublicationConflict",
    "RecordNotFound",
    "SafeguardLoss",
    "ScanLimitExceeded",
    "StateError",
    "StoreChanged",
    "StoreUnavailable",
    "UnexpectedArgument",
]


class KnowtkError(Exception):
    """Base class: every error knowtk raises on purpose."""

    code = "knowtk_error"


class InvalidArgument(KnowtkError, ValueError):
    """An argument is missing, of the wrong type, or outside its allowed values."""

    code = "invalid_argument"

    def __init__(self, argument: str, message: str, *, allowed: Any = None, value: Any = None) -> None:
        self.argument = argument
        self.message = message
        self.allowed = allowed
        self.value = value
        text = f"{argument}: {message}"
        if allowed is not None:
            text += f" (allowed: {_describe(allowed)})"
        super().__init__(text)

    def renamed(self, argument: str) -> InvalidArgument:
        """The same refusal naming the argument as another surface spells it (``time_field`` for ``timeField``)."""
        return type(self)(argument, self.message, allowed=self.allowed, value=self.value)


class UnexpectedArgument(InvalidArgument, TypeError):
    """An argument this call does not take; also a TypeError, as Python's own for an unknown keyword."""

    code = "invalid_argument"


class StoreUnavailable(KnowtkError):
    """The store root is missing, not a folder, or unreadable: Markdown is the authority."""

    code = "store_unavailable"

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}")


class StoreChanged(KnowtkError):
    """The store changed between two reads that one answer needs; asking again answers from the new files."""

    code = "store_changed"


class StateError(KnowtkError):
    """state.sqlite belongs to another store, is corrupt, or is from a newer knowtk."""

    code = "state_error"

    def __init__(self, path: str, message: str) -> None:
        self.path = path
        super().__init__(f"{path}: {message}")


class SafeguardLoss(StateError):
    """Safeguards were lost that neither state.sqlite nor its journal can give back; accepted explicitly only."""

    code = "safeguards_lost"


class ScanLimitExceeded(KnowtkError):
    """The scan would exceed a limit; the query is refused rather than answered from part of the store."""

    code = "scan_limit"

    def __init__(self, limit: str, value: int, maximum: int) -> None:
        self.limit = limit
        self.value = value
        self.maximum = maximum
        super().__init__(
            f"{limit}: the store has {value:,}, the scan allows {maximum:,}; "
            f"query a narrower scope or open the store with a higher {limit}"
        )


class MissingDependency(KnowtkError, ImportError):
    """An optional package that this call needs is not installed; ``pip install knowtk[extra]`` installs it."""

    code = "missing_dependency"

    def __init__(self, package: str, extra: str, detail: str = "") -> None:
        self.package = package
        self.extra = extra
        text = f"{package} is not installed: pip install 'knowtk[{extra}]'"
        super().__init__(text + (f" ({detail})" if detail else ""))


class RecordNotFound(KnowtkError, LookupError):
    """No available record has this id (it may be missing, withdrawn, invalid or private)."""

    code = "not_found"

    def __init__(self, id: str, message: str | None = None) -> None:
        self.id = id
        super().__init__(message or f"no available record with id {id!r}")


class PublicationConflict(KnowtkError):
    """A write found its file other than the caller read it (a stale ``expectedSha256``, or a change between the
    check and the write): refused, never merged; read the record again and decide."""

    code = "publication_conflict"

    def __init__(self, path: str, expected: str | None, actual: str | None, message: str | None = None) -> None:
        self.path = path
        self.expected = expected
        self.actual = actual
        shown = actual if actual is not None else "no file"
        super().__init__(
            message
            or f"{path}: the file changed since it was read (expected sha256 {expected}, found {shown}); "
            "nothing was written: read the record again and retry with its new sha256"
        )


class IdentityConflict(KnowtkError):
    """``create`` of an id that a file of the store already claims (or a path that already exists)."""

    code = "identity_conflict"

    def __init__(self, id: str, path: str | None, message: str | None = None) -> None:
        self.id = id
        self.path = path
        super().__init__(message or f"{id!r} already exists ({path}); use update, or choose another id")


class NoKnownPast(KnowtkError):
    """No past reaches back to the instant asked: ``.earliest`` is the earliest instant that can be answered
    (None when there is none: the store lies in no Git work tree, or its history holds no commit of it)."""

    code = "no_known_past"

    def __init__(self, instant: str, earliest: str | None, message: str | None = None) -> None:
        self.instant = instant
        self.earliest = earliest
        reach = f"the earliest instant known is {earliest}" if earliest else "no instant of its past is known"
        super().__init__(f"{instant}: {message or 'the store is not known that far back'}; {reach}")


class PastIsReadOnly(KnowtkError):
    """A write (or a history of writes) asked of a view of the store in the past: only the present store writes."""

    code = "past_is_read_only"


def _describe(allowed: Any) -> str:
    if isinstance(allowed, str):
        return allowed
    if isinstance(allowed, Iterable):
        return ", ".join(repr(a) for a in allowed)
    return repr(allowed)
