"""The engine: one store's scan, snapshot and projections, kept in step at every query.

- ``engine``: ``Engine`` (the snapshot of the files, the keyword projections reconciled with it,
  the registered projections kept) and ``KeywordIndex``;
- ``desired``: the keyword projections' desired maps ({id: sha256}), derived from a snapshot, or trusted
  from the rows an image's mark vouches for and patched over without reading them whole; and the projection
  of the records expired since, which only a search at an instant reads (``ExpiredKeyword``);
- ``transactions``: ``run_all``, one call across several engines (locks in order, one
  transaction each, run again when another process got in the way);
- ``repair``: the steps of ``Engine.check`` (state.sqlite, safeguards, scan cache, keyword tables).
"""
