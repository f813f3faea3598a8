"""The scan: which record files changed since the last query, and their parsed frontmatter.

- ``changes``: the ``ChangeSource`` seam and ``StatWalk``, the portable walk and its listing rules.
- ``watch``: ``InotifyWatch``, the change source that learns from the kernel (Linux).
- ``entry``: one record file read, hashed and parsed (``load_file``), kept as a ``FileEntry``.
- ``pool``: bulk loading: a process pool of parse workers, the collector paused during a load.
- ``cache``: the ``Scanner``, which keeps every file's entry in step and caches it in ``scan_files_v1``.
- ``rows``: ``scan_files_v1`` itself: its schema, its rows, the entries made of them (``LazyEntries``).
- ``packs``: ``scan_folders_v1``, the rows packed by folder so that a new process compares an unchanged
  folder at once, and ``FolderPacks``, the scanner's part that reads, unpacks and writes them.
- ``progress``: progress bars for long work.
"""
