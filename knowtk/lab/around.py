"""``compare_mutation``: the gold set run before and after one change to the store, compared, in one call."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from knowtk.errors import InvalidArgument
from knowtk.lab.comparison import compare
from knowtk.lab.goldset import GoldSet, Variant
from knowtk.lab.runner import run
from knowtk.store import Store

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["OPERATIONS", "compare_mutation"]

OPERATIONS = ("create", "update", "supersede", "withdraw", "reinstate")


def compare_mutation(
    gold: GoldSet,
    store: Store,
    operation: str,
    id: str,
    *,
    variants: Sequence[str | Variant] | None = None,
    **change: Any,
) -> pd.DataFrame:
    """Run ``gold`` on ``store``, make the change (``store.<operation>(id, **change)``), run it again, and compare.

    Returns :func:`knowtk.lab.compare` of the two runs (changed cases first); ``attrs["receipt"]`` is the
    change's receipt, ``attrs["before"]``/``attrs["after"]`` the two runs. A refused change raises before the
    second run, and the store is as it was.
    """
    if operation not in OPERATIONS:
        raise InvalidArgument("operation", f"{operation!r} is not a mutation", allowed=OPERATIONS)
    before = run(gold, store, variants=variants, why_not=False)
    receipt = getattr(store, operation)(id, **change)["receipt"]
    after = run(gold, store, variants=variants, why_not=False)
    frame = compare(before, after)
    frame.attrs.update(receipt=receipt, before=before, after=after)
    return frame
