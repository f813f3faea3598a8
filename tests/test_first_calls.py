"""The shortcuts of a query's first call (issue 20) give the answers of the paths they replace.

- ``FtsProjection.matching`` asks for many rows in one pass over the expression's rows (``SCAN_FROM_ROWS``):
  the rows FTS5 finds seeking each of them.
- ``filtered_bm25`` merges the phrases' sorted keys without ``np.union1d``/``np.intersect1d`` (which import
  numpy.ma): the same arrays.
"""

from __future__ import annotations

import random

import numpy as np
import pytest

from knowtk.index import bm25, fts
from knowtk.index.fts import QueryTerms
from tests.helpers import StoreBuilder
from tests.test_kept_counts import _build


@pytest.mark.parametrize("mode", ["all", "any", "phrase"])
def test_matching_in_one_pass_is_the_seeks_answer(
    builder: StoreBuilder, monkeypatch: pytest.MonkeyPatch, mode: str
) -> None:
    rng = random.Random(11)
    _build(builder, rng, 120)
    store = builder.open()
    main = store.engine.keyword(store.snapshot()).main
    rowids = sorted(main.id_of)
    asked_sets = [
        rng.sample(rowids, 60),  # scattered: a JSON array
        rowids[10:70],  # every rowid of a range: rowid BETWEEN
        rowids,
        [rowids[0]],
        [],
    ]
    for words in (("the",), ("the", "alpha"), ("alpha", "river", "cafe"), ("the", "absent")):
        terms = QueryTerms(words, mode)
        for asked in asked_sets:
            monkeypatch.setattr(fts, "SCAN_FROM_ROWS", 10**9)
            sought = main.matching(terms, asked)
            monkeypatch.setattr(fts, "SCAN_FROM_ROWS", 1)
            assert main.matching(terms, asked) == sought
            assert main.matching(terms, iter(asked)) == sought
    assert main.matching(QueryTerms(("the",), "all"), rowids)  # the test asked something that matches


def test_union_and_intersection_are_numpys() -> None:
    rng = random.Random(5)
    for _ in range(200):
        a = np.array(sorted(rng.sample(range(300), rng.randint(0, 40))), dtype=np.int64)
        b = np.array(sorted(rng.sample(range(300), rng.randint(0, 40))), dtype=np.int64)
        union, meet = bm25._union(a, b), bm25._intersection(a, b)
        assert union.dtype == np.int64 and meet.dtype == np.int64
        assert union.tolist() == np.union1d(a, b).tolist()
        assert meet.tolist() == np.intersect1d(a, b).tolist()
