"""knowtk: explore a Markdown knowledge store from Jupyter.

    import knowtk
    store = knowtk.open_store("data/fixtures/demo")
    store.grep("vector index").to_frame()

Layers, imports pointing one way only::

    records, datevalues, config       one file, its frontmatter and validity
    scan, state, snapshot             the store at a query: changes, safeguards, availability, chains
    keyword, engine                   projections in state.sqlite, reconciled at every query
    query/*                           the tools (grep, lookup, records, dates, knowl)
    results, frames                   Result: the contract's dict and a DataFrame
    store, workspace                  the Python surface
    plots, widgets, cli               notebook and command-line front ends
"""

from knowtk.errors import (
    InvalidArgument,
    KnowtkError,
    RecordNotFound,
    ScanLimitExceeded,
    StateError,
    StoreUnavailable,
)
from knowtk.results import Result
from knowtk.store import Store, open_store
from knowtk.workspace import Workspace

__all__ = [
    "InvalidArgument",
    "KnowtkError",
    "RecordNotFound",
    "Result",
    "ScanLimitExceeded",
    "StateError",
    "Store",
    "StoreUnavailable",
    "Workspace",
    "__version__",
    "open_store",
]

__version__ = "0.1.0"
