"""knowtk.lab.metrics on hand-computed cases: one test per metric, plus the edges every metric shares."""

from __future__ import annotations

import math

import pytest

from knowtk.lab.metrics import METRICS, dcg, hit_at, ndcg_at, recall_at, reciprocal_rank, score

RANKED = ["a", "b", "c", "d", "e"]


def test_hit_at_1_is_whether_the_top_result_is_expected() -> None:
    assert hit_at(RANKED, {"a": 1}, 1) == 1.0
    assert hit_at(RANKED, {"b": 1}, 1) == 0.0
    assert hit_at(RANKED, {"b": 1, "a": 2}, 1) == 1.0


def test_hit_at_k_looks_at_the_first_k_only() -> None:
    assert hit_at(RANKED, {"c": 1}, 2) == 0.0
    assert hit_at(RANKED, {"c": 1}, 3) == 1.0
    assert hit_at(RANKED, {"z": 1}, 5) == 0.0
    assert hit_at(["a"], {"a": 1}, 10) == 1.0  # an answer shorter than k


def test_recall_at_k_is_the_share_of_expected_ids_in_the_first_k() -> None:
    gains = {"b": 1, "d": 1, "z": 1}
    assert recall_at(RANKED, gains, 3) == pytest.approx(1 / 3)
    assert recall_at(RANKED, gains, 4) == pytest.approx(2 / 3)
    assert recall_at(RANKED, gains, 1) == 0.0
    assert recall_at(RANKED, {"a": 3, "e": 1}, 5) == 1.0  # grades do not weigh in recall


def test_reciprocal_rank_is_one_over_the_first_expected_rank_in_the_whole_answer() -> None:
    assert reciprocal_rank(RANKED, {"c": 1, "d": 1}) == pytest.approx(1 / 3)
    assert reciprocal_rank(RANKED, {"e": 1}) == pytest.approx(1 / 5)
    assert reciprocal_rank(RANKED, {"z": 1}) == 0.0
    assert reciprocal_rank([], {"z": 1}) == 0.0


def test_dcg_uses_exponential_gain_and_a_log2_discount() -> None:
    # (2**3 - 1)/log2(2) + (2**0 - 1)/log2(3) + (2**1 - 1)/log2(4) = 7 + 0 + 0.5
    assert dcg([3, 0, 1]) == pytest.approx(7.5)
    assert dcg([]) == 0.0


def test_ndcg_at_k_with_graded_relevance() -> None:
    gains = {"a": 1, "c": 3}
    # DCG@3 = 1/log2(2) + 0 + 7/log2(4) = 4.5; ideal [3, 1]: 7 + 1/log2(3)
    ideal = 7 + 1 / math.log2(3)
    assert ndcg_at(RANKED, gains, 3) == pytest.approx(4.5 / ideal)
    # DCG@2 = 1; the ideal order is still [3, 1]
    assert ndcg_at(RANKED, gains, 2) == pytest.approx(1 / ideal)
    # the ideal is cut at k too: one slot holds the best grade
    assert ndcg_at(RANKED, gains, 1) == pytest.approx(1 / 7)
    assert ndcg_at(["c", "a"], gains, 2) == pytest.approx(1.0)
    assert ndcg_at(["x", "y"], gains, 2) == 0.0


def test_a_repeated_id_gains_once() -> None:
    assert ndcg_at(["a", "a"], {"a": 1, "b": 1}, 2) == pytest.approx(1 / (1 + 1 / math.log2(3)))


def test_every_metric_is_undefined_without_an_expected_id() -> None:
    assert score(RANKED, {}, 5) == dict.fromkeys(METRICS)


def test_score_names_every_metric_in_order() -> None:
    values = score(["b", "a"], {"a": 1}, 1)
    assert list(values) == list(METRICS)
    assert values == {"hit@1": 0.0, "hit@k": 0.0, "recall@k": 0.0, "mrr": 0.5, "ndcg@k": 0.0}
