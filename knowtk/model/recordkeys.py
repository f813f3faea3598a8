"""The frontmatter keys of a record (STORE.md section 1), in the order a record file writes them.

The one list of the format's keys: the profiles tell knowtk's own keys from another tool's by it, and
the demo store and the tests write and check frontmatter in this order.
"""

from __future__ import annotations

__all__ = ["RECORD_KEYS"]

RECORD_KEYS = (
    "id",
    "kind",
    "type",
    "title",
    "aliases",
    "tags",
    "status",
    "superseded_by",
    "revision",
    "summary",
    "occurred_at",
    "recorded_at",
    "updated_at",
    "due_at",
    "expires_at",
    "entities",
    "owner",
    "depends_on",
    "source",
    "source_event",
    "from",
    "to",
    "relation",
    "origin",
    "author",
    "evidence",
    "affected_paths",
    "category",
    "reasoning",
    "alternatives",
    "fields",
)
