"""knowtk.index.semantic: vector packing, cosine, rank fusion, and the optional real model."""

from __future__ import annotations

import math
import os
import socket
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from knowtk.errors import InvalidArgument
from knowtk.index import semantic
from knowtk.index.semantic import RELEVANCE_FLOOR, UNAVAILABLE_REASON, cosine, fuse, load_embedder, pack, unpack

# --- pack / unpack -----------------------------------------------------------------------------------


def test_pack_is_little_endian_float32() -> None:
    blob = pack([1.0, -2.5, 0.0])
    assert len(blob) == 12
    assert blob == struct.pack("<3f", 1.0, -2.5, 0.0)


def test_pack_unpack_round_trip_exact_for_float32_values() -> None:
    vec = [0.5, -0.25, 3.0, 1e-3, -7.125]
    back = unpack(pack(vec))
    assert back[:3] == [0.5, -0.25, 3.0]
    assert back[4] == -7.125
    assert back[3] == pytest.approx(1e-3, rel=1e-6)  # float32 rounding only
    assert unpack(pack(back)) == back  # float32 values survive exactly


def test_pack_unpack_empty_and_generator() -> None:
    assert pack([]) == b""
    assert unpack(b"") == []
    assert unpack(pack(float(i) for i in range(4))) == [0.0, 1.0, 2.0, 3.0]


def test_unpack_rejects_truncated_blob() -> None:
    with pytest.raises(InvalidArgument):
        unpack(b"\x00\x00\x80")
    with pytest.raises(ValueError):  # InvalidArgument is also a ValueError
        unpack(pack([1.0]) + b"\x00")


# --- cosine ------------------------------------------------------------------------------------------


def test_cosine_basic_values() -> None:
    assert cosine([1.0, 0.0], [1.0, 0.0]) == pytest.approx(1.0)
    assert cosine([1.0, 0.0], [0.0, 1.0]) == pytest.approx(0.0)
    assert cosine([1.0, 2.0], [-1.0, -2.0]) == pytest.approx(-1.0)
    assert cosine([3.0, 4.0], [4.0, 3.0]) == pytest.approx(24 / 25)


def test_cosine_is_scale_invariant_and_symmetric() -> None:
    a, b = [0.3, -1.2, 2.0], [1.0, 0.5, 0.25]
    assert cosine(a, b) == pytest.approx(cosine(b, a))
    assert cosine([10 * x for x in a], b) == pytest.approx(cosine(a, b))


def test_cosine_of_zero_vector_is_zero() -> None:
    assert cosine([0.0, 0.0], [1.0, 2.0]) == 0.0
    assert cosine([], []) == 0.0


def test_cosine_rejects_length_mismatch() -> None:
    with pytest.raises(InvalidArgument):
        cosine([1.0, 2.0], [1.0])


def test_cosine_works_on_unpacked_blobs() -> None:
    a, b = [0.6, 0.8, 0.0], [0.0, 0.6, 0.8]
    assert cosine(unpack(pack(a)), unpack(pack(b))) == pytest.approx(0.48, abs=1e-6)


# --- fuse (reciprocal-rank fusion) -----------------------------------------------------------------------


def test_fuse_scores_are_sum_of_reciprocal_ranks() -> None:
    fused = fuse(["a", "b", "c"], ["b", "d"], k=60)
    assert fused["a"] == pytest.approx(1 / 61)
    assert fused["b"] == pytest.approx(1 / 62 + 1 / 61)
    assert fused["c"] == pytest.approx(1 / 63)
    assert fused["d"] == pytest.approx(1 / 62)
    assert set(fused) == {"a", "b", "c", "d"}


def test_fuse_orders_best_first_and_breaks_ties_by_first_seen() -> None:
    fused = fuse(["a", "b", "c"], ["c", "b", "a"])
    # a and c: 1/61 + 1/63 = 0.032266; b: 2/62 = 0.032258 (1/(k+r) is convex, so extremes edge ahead).
    assert fused["a"] == pytest.approx(fused["c"])
    assert fused["a"] > fused["b"]
    assert list(fused) == ["a", "c", "b"]  # the a/c tie keeps first-seen order
    scores = list(fused.values())
    assert scores == sorted(scores, reverse=True)


def test_fuse_item_in_both_lists_beats_top_of_one_list() -> None:
    fused = fuse(["x", "both"], ["y", "both"])
    assert next(iter(fused)) == "both"


def test_fuse_k_controls_weight_of_top_ranks() -> None:
    small_k = fuse(["a", "b"], [], k=0)
    assert small_k == {"a": 1.0, "b": 0.5}
    big_k = fuse(["a", "b"], [], k=1000)
    assert big_k["a"] / big_k["b"] == pytest.approx(1002 / 1001)


def test_fuse_empty_and_one_sided_inputs() -> None:
    assert fuse([], []) == {}
    assert fuse([], ["q", "r"]) == {"q": pytest.approx(1 / 61), "r": pytest.approx(1 / 62)}
    assert list(fuse(iter(["m", "n"]), iter([]))) == ["m", "n"]  # any iterables


def test_fuse_repeated_id_counts_once_at_best_rank() -> None:
    fused = fuse(["a", "a", "b"], [])
    assert fused == {"a": pytest.approx(1 / 61), "b": pytest.approx(1 / 62)}


def test_fuse_accepts_non_string_ids() -> None:
    fused = fuse([3, 1], [1, 2])
    assert next(iter(fused)) == 1
    assert fused[2] == pytest.approx(1 / 62)


@pytest.mark.parametrize("bad", [-1, -0.5, math.inf, math.nan, "60", None, True])
def test_fuse_rejects_bad_k(bad: Any) -> None:
    with pytest.raises(InvalidArgument):
        fuse(["a"], ["a"], k=bad)


# --- loading without the extra -------------------------------------------------------------------------


def test_module_constants() -> None:
    assert UNAVAILABLE_REASON == "no embedding model installed"
    assert 0.0 < RELEVANCE_FLOOR < 1.0


def test_import_does_not_pull_in_the_optional_libraries() -> None:
    code = (
        "import sys, knowtk.index.semantic\n"
        "bad = {'wordllama', 'tokenizers', 'safetensors'} & set(sys.modules)\n"
        "assert not bad, bad\n"
    )
    root = str(Path(__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [root, os.environ.get("PYTHONPATH")]))}
    subprocess.run([sys.executable, "-c", code], check=True, env=env, cwd=root)


@pytest.fixture
def fresh_cache(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(semantic, "_cached", None)
    yield


@pytest.mark.parametrize("value", ["0", "false", "OFF", " no "])
def test_env_switch_forces_none(monkeypatch: pytest.MonkeyPatch, value: str) -> None:
    monkeypatch.setenv("KNOWTK_SEMANTIC", value)
    assert load_embedder() is None


def test_missing_extra_gives_none_not_an_error(monkeypatch: pytest.MonkeyPatch, fresh_cache: None) -> None:
    monkeypatch.delenv("KNOWTK_SEMANTIC", raising=False)
    monkeypatch.setattr(semantic, "MODEL_PACKAGE", "knowtk_no_such_model_package")
    assert load_embedder() is None
    assert semantic._cached is None  # a failure is not cached: installing the extra later works


# --- the real model (only with `pip install knowtk[semantic]`) ---------------------------------------


@pytest.fixture
def embedder(monkeypatch: pytest.MonkeyPatch) -> semantic.Embedder:
    pytest.importorskip("wordllama", reason=UNAVAILABLE_REASON)
    monkeypatch.delenv("KNOWTK_SEMANTIC", raising=False)
    found = load_embedder()
    assert found is not None, "wordllama is installed but the model did not load"
    return found


def test_real_model_loads_without_network(monkeypatch: pytest.MonkeyPatch, fresh_cache: None) -> None:
    pytest.importorskip("wordllama", reason=UNAVAILABLE_REASON)
    monkeypatch.delenv("KNOWTK_SEMANTIC", raising=False)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")

    def no_network(*args: object, **kwargs: object) -> None:
        raise AssertionError("the embedding model tried to use the network")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    monkeypatch.setattr(socket, "getaddrinfo", no_network)
    found = semantic._load_wordllama()
    assert len(found.embed(["offline check"])[0]) == found.dim


def test_real_model_identity_and_shape(embedder: semantic.Embedder) -> None:
    assert embedder.name.startswith("wordllama-") and str(embedder.dim) in embedder.name
    assert embedder.dim == 256
    vecs = embedder.embed(["hello world", "a second, longer text about knowledge stores"])
    assert len(vecs) == 2 and all(len(v) == embedder.dim for v in vecs)
    assert all(isinstance(x, float) for x in vecs[0])
    for v in vecs:
        assert math.sqrt(sum(x * x for x in v)) == pytest.approx(1.0, abs=1e-5)
    assert embedder.embed([]) == []


def test_real_model_is_cached_and_deterministic(embedder: semantic.Embedder) -> None:
    assert load_embedder() is embedder
    text = ["The deployment pipeline failed at the build step."]
    assert embedder.embed(text) == embedder.embed(text)


def test_real_model_empty_text_gives_zero_vector(embedder: semantic.Embedder) -> None:
    empty, word = embedder.embed(["", "word"])
    assert empty == [0.0] * embedder.dim
    assert all(math.isfinite(x) for x in word)
    assert cosine(empty, word) == 0.0


def test_real_model_related_beats_unrelated(embedder: semantic.Embedder) -> None:
    cases = [
        (
            "server outage last night",
            "Incident report: the API was down for 40 minutes after a disk filled up on the primary host.",
            "Mix flour, sugar, cocoa powder and eggs, then bake at 180 degrees for 35 minutes.",
        ),
        (
            "The cat sat on the mat.",
            "A kitten is resting on a rug.",
            "Quarterly tax filing deadline for corporations.",
        ),
        (
            "solar panel installation",
            "Photovoltaic modules were mounted on the roof to generate electricity from sunlight.",
            "The home team won 3-1 in the final, scoring twice in the second half.",
        ),
        (
            "vacation policy",
            "Employees get 25 days of paid leave per year; holidays must be requested two weeks ahead.",
            "Qubits in superposition allow certain algorithms to outperform classical computers.",
        ),
    ]
    for query, related, unrelated in cases:
        q, r, u = embedder.embed([query, related, unrelated])
        rel, unrel = cosine(q, r), cosine(q, u)
        assert rel > unrel, (query, rel, unrel)
        assert rel >= RELEVANCE_FLOOR > unrel, (query, rel, unrel)
        # vectors are unit length, so the dot product is the cosine, also after a BLOB round trip
        assert sum(a * b for a, b in zip(q, r, strict=True)) == pytest.approx(rel, abs=1e-5)
        assert cosine(unpack(pack(q)), unpack(pack(r))) == pytest.approx(rel, abs=1e-5)


def test_real_model_env_switch_gives_none(embedder: semantic.Embedder, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KNOWTK_SEMANTIC", "0")
    assert load_embedder() is None
    monkeypatch.setenv("KNOWTK_SEMANTIC", "1")
    assert load_embedder() is embedder


def test_real_model_long_text_is_bounded(embedder: semantic.Embedder) -> None:
    long_text = "backup restore database snapshot " * 20_000  # 80,000 words, well past one token chunk
    short_text = "backup restore database snapshot"
    long_vec, short_vec = embedder.embed([long_text, short_text])
    assert cosine(long_vec, short_vec) > 0.95  # the same words, so nearly the same mean
