"""knowtk: explore a Markdown knowledge store from Jupyter.

    import knowtk
    store = knowtk.open_store("data/fixtures/demo")
    store.grep("vector index").to_frame()

Layers, top to bottom; a module imports only from its own layer or below (the import-linter
contract in pyproject.toml, checked by ``lint-imports``)::

    serve                             knowtk serve: the server the command line forwards its queries to
    cli | mcp | lab | notebook        front ends, independent of each other
    ui                                HTML and widget parts shared by notebook and lab
    workspace                         Workspace: a store and its linked stores, for knowl_query
    store                             Store and open_store: the Python surface of one store
    results                           Result: the contract's dict and a DataFrame
    query                             the tools (grep, lookup, records, dates, knowl), explain, chains
    write                             knowledge_mutation and knowledge_history: spliced, atomic, journalled writes
    frames | export                   typed DataFrame building | the snapshot's tables as Parquet
    engine                            reconciles the projections with the snapshot at every query
    index                             projections in state.sqlite: FTS5, BM25, temporal, embeddings
    snapshot                          the store at a query: availability, chains, safeguards
    scan                              what changed: the walk, inotify, the scanner cache
    state                             state.sqlite and the safeguard journal
    model                             one file: records, date values, config
    errors                            the one exception tree
"""

import importlib
import typing

from knowtk.errors import (
    IdentityConflict,
    InvalidArgument,
    KnowtkError,
    MissingDependency,
    NoKnownPast,
    PastIsReadOnly,
    PublicationConflict,
    RecordNotFound,
    SafeguardLoss,
    ScanLimitExceeded,
    StateError,
    StoreChanged,
    StoreUnavailable,
    UnexpectedArgument,
)

if typing.TYPE_CHECKING:
    from knowtk.results import Result
    from knowtk.store import Store, open_store
    from knowtk.workspace import Workspace

# Imported at first use (PEP 562), so that ``import knowtk`` costs the exception tree alone: a command
# line a running ``knowtk serve`` answers (docs/server.md) never loads the store it does not open.
_LAZY = {
    "Result": "knowtk.results",
    "Store": "knowtk.store",
    "open_store": "knowtk.store",
    "Workspace": "knowtk.workspace",
}

__all__ = [
    "IdentityConflict",
    "InvalidArgument",
    "KnowtkError",
    "MissingDependency",
    "NoKnownPast",
    "PastIsReadOnly",
    "PublicationConflict",
    "RecordNotFound",
    "Result",
    "SafeguardLoss",
    "ScanLimitExceeded",
    "StateError",
    "Store",
    "StoreChanged",
    "StoreUnavailable",
    "UnexpectedArgument",
    "Workspace",
    "__version__",
    "open_store",
]

#: The one version source: pyproject.toml reads it (``[tool.hatch.version]``).
__version__ = "0.3.0"


def __getattr__(name: str) -> object:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'knowtk' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # the next access is a plain attribute
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
