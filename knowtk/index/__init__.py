"""Projections: what state.sqlite derives from the snapshot, rebuildable at any time.

- ``fts``: ``FtsProjection``, a keyword projection (an SQLite FTS5 table and its rows table), made of parts:
  ``fts_tables`` (names, format, query terms, the version the parts hold), ``fts_storage`` (the tables made,
  checked and written), ``stored_rows`` (the rows read by need), ``image_mark``, ``rowmap``, ``row_changes``
  (change log, per-snapshot memo), ``row_arrays``, ``phrase_counts``, ``matching``, ``texts``, ``among``
  (some rows as SQL) and ``parallel_read`` (reads on a second connection);
- ``filtered``: the rows of a keyword projection that pass a query's record filters;
- ``bm25``: ranking over keyword projections, exact over any filtered subset;
- ``temporal``: structured dates and explicit associations;
- ``embeddings``: the vectors of ``knowl_query``; ``semantic``: the optional embedding model;
- ``projection``: the protocol every other projection follows, and the registry of their kinds.

Words the index uses:

- *mirror*: what a projection holds in memory of its tables (loaded by need, forgotten after a rollback or
  when another process wrote: ``invalidate``).
- *rows version* (``rows_version``): a counter bumped whenever a keyword projection's rows held in memory
  change (a reload, a write of its own); whatever is derived from the rows (counts, arrays, memo, rowmap)
  is kept with the rows version it is of, and is stale when the counter moved on.
- *loaded at* (``FtsTables.loaded_at``): the state's ``data_version`` the mirror was loaded at; a read checks
  it first (``check_current``) so that no query mixes rows of two versions.
- *desired*, *synced*: the ``{id: sha256}`` map the engine wants a projection to hold, and the one (and its
  version) the rows were last brought to by ``reconcile``.
- *image*: a snapshot stored in state.sqlite (``knowtk.snapshot.stored``), named by its key. The *image mark*
  says the rows are exactly that image's records; *unsure* ids are those where they may differ from it (a
  process's own edits since), so the next process compares those ids alone.
- *stored position*: an id's place in a stored image's list of ids; *base*: the digest of that list.
- *rowmap*: the rowid and tokens of each stored id's row, by stored position, written after a build that
  wrote every row (*built whole*); its *log* holds the rowids changed since (``changed``), and ``newer`` the rows
  written since. A new process's filter finds its rows from it without reading the rows table.
- *generation*: a snapshot's number; the *memo* keeps what queries derive from one generation and one rows
  version (a filter's rows). *Carried*: the previous generation's memo entry handed over with the rows
  deleted and inserted since, for the caller to patch instead of deriving it again.
- *change log*: the rows each reconcile deleted and inserted, by rows version: kept counts and carried sets
  are patched from it.
- *kept counts*: a phrase's weighted count per row, solved from SQLite's ``bm25()`` of the phrase alone, kept
  where a query read every row holding it anyway (never read for a later query's sake).
- *native*: ranked or scored by SQLite's own ``bm25()`` and ``ORDER BY`` (``native_rows``, ``native_top``).
- *among*: some rows as an SQL clause (``rows_among``): a range, a few *runs* of consecutive rowids and
  *extra* rows, or a JSON array; *looked up here*: the rows an expression matches read whole and looked up
  in Python rather than by SQLite.
- *parallel read* (``ParallelRead``): a read run on the state's second connection in a thread, beside the
  query, over the same state of the table; read in turn on the query's connection when that cannot be.
- *damaged*, *disagreement*: tables a query found inconsistent (a score no whole count solves), rebuilt by the
  next ``ensure`` and the query run again (``ProjectionChanged``).
"""
