"""A whole observation's input for ``git fast-import``, made in a process of its own.

The first observation of a store (and one after the record was lost) reads every record file again: 100,000 files
at 100k records. Read in a thread of the process that runs the cold build beside it, that work held the
interpreter's lock against the build, whose keyword index took 24 s instead of 14 (``bench/seen.py``). So
``knowtk.write.seen`` writes a plan (``write_plan``: the commit's head, then each path with the blob and size the
store's HEAD has it at, if any) and runs this module (``python -m knowtk.write.seen_feed PLAN ROOT MAX_BYTES``),
which writes fast-import's input to its standard output, piped straight into ``git fast-import``: the files are
read and streamed in a process of their own.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterable, Iterator

from knowtk.model.records import read_regular

__all__ = ["FEED_APART_FROM", "main", "quoted", "size_of", "whole_files", "write_plan"]

FEED_APART_FROM = 2000  # files of a whole observation from which they are read in a process of their own


def quoted(path: str) -> bytes:
    """A path as fast-import reads it: C-style quoted when it starts with a quote or holds a line break."""
    raw = os.fsencode(path)
    if not raw.startswith(b'"') and b"\n" not in raw:
        return raw
    return b'"' + raw.replace(b"\\", b"\\\\").replace(b'"', b'\\"').replace(b"\n", b"\\n") + b'"'


def size_of(path: str) -> int:
    try:
        return os.lstat(path).st_size
    except OSError:
        return -1


def whole_files(
    root: str, paths: Iterable[str], committed: dict[str, tuple[str, int]], max_bytes: int
) -> Iterator[bytes]:
    """Fast-import's lines of every file of a whole observation: a file as HEAD has it referred to by its blob (in
    the alternate), any other one inline; a file gone or no longer regular is left out."""
    for path in paths:
        name = quoted(path)
        full = os.path.join(root, *path.split("/"))
        known = committed.get(path)
        if known is not None and size_of(full) == known[1]:
            yield b"M 100644 %s %s\n" % (known[0].encode(), name)
            continue
        data = read_regular(full, max_bytes)
        if isinstance(data, bytes):
            yield b"M 100644 inline %s\ndata %d\n" % (name, len(data))
            yield data
            yield b"\n"


def write_plan(path: str, head: bytes, paths: Iterable[str], committed: dict[str, tuple[str, int]]) -> None:
    """The plan ``main`` reads: the head's length and bytes, then ``PATH NUL BLOB NUL SIZE NUL`` per file (no blob
    and size -1 for a file HEAD does not have as it is)."""
    fields = []
    for name in paths:
        blob, size = committed.get(name, ("", -1))
        fields += [name, blob, str(size)]
    with open(path, "wb") as f:
        f.write(b"%d\n" % len(head) + head)
        f.write(os.fsencode("\0".join(fields)))


def main(argv: list[str] | None = None) -> int:
    """Write the input of the plan ``argv[0]`` (of the store at ``argv[1]``, files at most ``argv[2]`` bytes)."""
    plan, root, max_bytes = argv if argv is not None else sys.argv[1:4]
    with open(plan, "rb") as f:
        data = f.read()
    length, _, rest = data.partition(b"\n")
    head, body = rest[: int(length)], rest[int(length) :]
    fields = os.fsdecode(body).split("\0") if body else []
    paths = fields[0::3]
    committed = {p: (blob, int(size)) for p, blob, size in zip(paths, fields[1::3], fields[2::3], strict=True) if blob}
    out = os.fdopen(sys.stdout.fileno(), "wb", buffering=1 << 20, closefd=False)
    out.write(head)
    for chunk in whole_files(root, paths, committed, int(max_bytes)):
        out.write(chunk)
    out.write(b"done\n")
    out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
