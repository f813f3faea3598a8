"""Projections: what state.sqlite derives from the snapshot, rebuildable at any time.

- ``fts``: the keyword projections (SQLite FTS5 tables, their mirror, reading them back);
- ``bm25``: ranking over keyword projections, exact over any filtered subset;
- ``temporal``: structured dates and explicit associations;
- ``embeddings``: the vectors of ``knowl_query``; ``semantic``: the optional embedding model;
- ``projection``: the protocol every other projection follows, and the registry of their kinds.
"""
