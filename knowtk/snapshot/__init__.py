"""The store as one query sees it: the rules of STORE.md §1 that need every record at once.

Modules, from the value up to how it is made and kept:

- ``model``: the ``Snapshot`` value and its ``SnapshotIndex``, ``ChainEnd``, and the small rules a query
  applies to a snapshot (``normalize_name``, ``is_expired``, ``in_scope``, the unavailability reasons).
- ``safeguards``: ``Safeguards``, every withdrawal and supersession ever seen, in state.sqlite and its journal.
- ``overlay``: the maps a build shares with the snapshot before it (``Layered``, ``Grouped``,
  ``GroupedBuilder``, ``Former``).
- ``build``: ``build_snapshot``, a snapshot from the scanned files and the previous snapshot.
- ``persist``: the snapshot image kept in state.sqlite, so that a new process loads it instead of building it.

Nothing is re-exported here: import from the module that defines a name.
"""
