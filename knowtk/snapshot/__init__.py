"""The store as one query sees it: the rules of STORE.md §1 that need every record at once.

Modules, from the value up to how it is made and kept:

- ``model``: the ``Snapshot`` value and its ``SnapshotIndex``, ``ChainEnd``, and the small rules a query
  applies to a snapshot (``normalize_name``, ``is_expired``, ``in_scope``, the unavailability reasons).
- ``safeguards``: ``Safeguards``, every withdrawal and supersession ever seen, in state.sqlite and its journal.
- ``overlay``: the maps a build shares with the snapshot before it (``Layered``, ``Grouped``,
  ``GroupedBuilder``, ``StaleRecord``).
- ``build``: ``build_snapshot``, a snapshot from the scanned files and the previous snapshot.
- ``image_format``, ``image_write``, ``image_delta``, ``image_parts``, ``stored``: the snapshot image kept in
  state.sqlite, so that a new process loads it instead of building it: what its parts are, how it is written
  whole or patched, the changes a patch holds, how its parts are read back, and the ``StoredSnapshot`` they make.

Nothing is re-exported here: import from the module that defines a name.
"""
