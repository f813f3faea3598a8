"""Optional semantic search: a small static embedding model that ships on PyPI.

Install with ``pip install knowtk[semantic]``. Without the extra, everything
here still imports (only the stdlib is used at module level);
:func:`load_embedder` then returns ``None`` and callers report
:data:`UNAVAILABLE_REASON`.

The model
---------
``wordllama`` (MIT, https://github.com/dleemiller/WordLlama) ships its
``l2_supercat`` model *inside the wheel*: a 32,000 x 256 float32 token table
(16 MB, ``wordllama/weights/l2_supercat_256.safetensors``) distilled from
Llama-2-family token embeddings, plus the Llama-2 tokenizer
(``wordllama/tokenizers/l2_supercat_tokenizer_config.json``). A text's vector
is the mean of its tokens' rows, L2-normalised. There is no transformer to
run: embedding is a table look-up, so it is CPU-fast (on 2 cores: 0.3 s to
load, about 30 ms per 1,000 short texts, 0.22 s per 1,000 records of 200
words) and needs numpy, ``tokenizers`` and ``safetensors``, never PyTorch.
Its authors report MTEB scores between GloVe's and all-MiniLM-L6-v2's.

No download happens at run time. This module does not even import
``wordllama`` (whose ``WordLlama.load`` looks for the tokenizer in the wrong
folder and would then fetch it from the Hugging Face hub, and whose import
calls ``logging.basicConfig``): it finds the installed package with
``importlib.util.find_spec`` and reads the two files above straight from
site-packages with ``tokenizers`` and ``safetensors``. If either file is
missing, the model is reported unavailable; nothing is fetched.

The floor
---------
:data:`RELEVANCE_FLOOR` (0.20) is the cosine below which a record is not taken
as a semantic match for a query. Measured with this model on 45 hand-written
query/record pairs over 22 topics, worded to share few words (details in
``docs/semantic-notes.md``): related pairs scored 0.13 to 0.63 (median 0.31);
the 1,888 query/record pairs from different topics -0.20 to 0.39 (median 0.02,
95th percentile 0.15, 99th 0.22). At 0.20, 87% of related one-sentence records
(80% of multi-paragraph ones) are kept and 1.5% of unrelated pairs get
through; 0.25 would drop a quarter of the related records, 0.15 would let 5%
of the unrelated ones through. Static embeddings miss some paraphrases that
share no words, so the floor only trims noise from the cosine ranking; the
answer's order comes from :func:`fuse` with BM25.
"""

from __future__ import annotations

import importlib.util
import math
import os
import sys
import threading
from array import array
from collections.abc import Hashable, Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol, TypeVar

from knowtk.errors import InvalidArgument

__all__ = [
    "ENV_VAR",
    "MODEL_PACKAGE",
    "RELEVANCE_FLOOR",
    "UNAVAILABLE_REASON",
    "Embedder",
    "WordLlamaEmbedder",
    "cosine",
    "fuse",
    "fuse_page",
    "load_embedder",
    "pack",
    "unpack",
]

UNAVAILABLE_REASON = "no embedding model installed"

#: Cosine below which a record is not a semantic match (see the module docstring).
RELEVANCE_FLOOR = 0.20

#: Setting this environment variable to ``0`` (or ``false``/``no``/``off``) disables semantic search.
ENV_VAR = "KNOWTK_SEMANTIC"

#: The PyPI distribution that carries the model; the ``semantic`` extra requires it.
MODEL_PACKAGE = "wordllama"
_MODEL_CONFIG = "l2_supercat"
_MODEL_DIM = 256
_WEIGHTS_FILE = f"weights/{_MODEL_CONFIG}_{_MODEL_DIM}.safetensors"
_TOKENIZER_FILE = f"tokenizers/{_MODEL_CONFIG}_tokenizer_config.json"
_TENSOR_KEY = "embedding.weight"
# Tokens summed per step, so a huge document never materialises a (tokens x dim) array at once.
_TOKEN_CHUNK = 8192
_OFF_VALUES = frozenset({"0", "false", "no", "off"})

K = TypeVar("K", bound=Hashable)


class Embedder(Protocol):
    """What knowtk needs from an embedding model."""

    #: Model id including version; a cache key for stored vectors.
    name: str
    #: Length of every vector.
    dim: int

    def embed(self, texts: list[str]) -> list[list[float]]:
        """One L2-normalised vector per text (dot product = cosine); all-zero for a text with no tokens."""
        ...


class WordLlamaEmbedder:
    """Mean-pooled static token embeddings from the table that the ``wordllama`` wheel ships.

    Same vectors as ``WordLlama.load("l2_supercat", dim=256).embed(texts, norm=True)``, but pooled per
    text without padding (a long record costs memory for itself only) and with an all-zero vector,
    not NaN, for a text that has no tokens.
    """

    def __init__(self, table: Any, tokenizer: Any, version: str) -> None:
        self._table = table  # numpy float32 array, (vocab, dim)
        self._tokenizer = tokenizer  # tokenizers.Tokenizer, padding and truncation off
        self._lock = threading.Lock()
        self.dim: int = int(table.shape[1])
        self.name: str = f"{MODEL_PACKAGE}-{version}/{_MODEL_CONFIG}-{self.dim}"

    def __repr__(self) -> str:
        return f"WordLlamaEmbedder(name={self.name!r}, dim={self.dim})"

    def embed(self, texts: list[str]) -> list[list[float]]:
        import numpy as np

        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise InvalidArgument("texts", "must be a list of strings")
        if not texts:
            return []
        with self._lock:  # a Tokenizer is not documented as safe to share between threads
            encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        vocab = self._table.shape[0]
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        for row, enc in enumerate(encodings):
            ids = np.asarray(enc.ids, dtype=np.int64)
            if ids.size == 0:
                continue
            np.clip(ids, 0, vocab - 1, out=ids)
            acc = np.zeros(self.dim, dtype=np.float32)
            for start in range(0, ids.size, _TOKEN_CHUNK):
                acc += self._table[ids[start : start + _TOKEN_CHUNK]].sum(axis=0)
            norm = float(np.linalg.norm(acc))
            if norm > 0.0 and math.isfinite(norm):
                out[row] = acc / norm
        vectors: list[list[float]] = out.tolist()
        return vectors


def disabled() -> bool:
    return os.environ.get(ENV_VAR, "").strip().lower() in _OFF_VALUES


def _load_wordllama() -> WordLlamaEmbedder:
    """Read the model from the installed ``wordllama`` package; raises if anything is missing."""
    from importlib.metadata import version

    from safetensors import safe_open
    from tokenizers import Tokenizer

    spec = importlib.util.find_spec(MODEL_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ImportError(f"{MODEL_PACKAGE} is not installed")
    root = Path(next(iter(spec.submodule_search_locations)))
    weights, tokenizer_file = root / _WEIGHTS_FILE, root / _TOKENIZER_FILE
    for path in (weights, tokenizer_file):
        if not path.is_file():
            raise FileNotFoundError(f"{path}: not in the installed {MODEL_PACKAGE} package")
    with safe_open(str(weights), framework="np") as f:
        table = f.get_tensor(_TENSOR_KEY).astype("float32", copy=False)
    if table.ndim != 2 or table.shape[1] != _MODEL_DIM:
        raise ValueError(f"{weights}: unexpected table shape {table.shape}")
    tokenizer = Tokenizer.from_file(str(tokenizer_file))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return WordLlamaEmbedder(table, tokenizer, version(MODEL_PACKAGE))


_cache_lock = threading.Lock()
_cached: Embedder | None = None


def load_embedder() -> Embedder | None:
    """The installed model's embedder, or ``None`` if there is none or ``KNOWTK_SEMANTIC=0``.

    Never raises: a missing or broken extra gives ``None`` (the cause is logged at DEBUG), and the
    caller reports :data:`UNAVAILABLE_REASON`. The environment variable is read on every call; a
    successful load is cached for the life of the process, a failure is retried on the next call
    (so installing the extra into a running kernel works).
    """
    global _cached
    if disabled():
        return None
    with _cache_lock:
        if _cached is None:
            try:
                _cached = _load_wordllama()
            except Exception as exc:  # ImportError, FileNotFoundError, a broken wheel: all mean "none"
                import logging  # only here: a process that never loads a model does not import logging

                logging.getLogger(__name__).debug("semantic search unavailable: %s: %s", type(exc).__name__, exc)
                return None
        return _cached


def cosine(a: Sequence[float], b: Sequence[float]) -> float:
    """Cosine similarity of two vectors; 0.0 if either is all-zero."""
    if len(a) != len(b):
        raise InvalidArgument("b", f"length {len(b)} differs from a's {len(a)}")
    dot = math.fsum(x * y for x, y in zip(a, b, strict=True))
    na = math.sqrt(math.fsum(x * x for x in a))
    nb = math.sqrt(math.fsum(y * y for y in b))
    if na == 0.0 or nb == 0.0:
        return 0.0
    return max(-1.0, min(1.0, dot / (na * nb)))


def pack(vec: Iterable[float]) -> bytes:
    """A vector as little-endian float32 bytes, for a SQLite BLOB (4 bytes per component)."""
    arr = array("f", vec)
    if sys.byteorder == "big":
        arr.byteswap()
    return arr.tobytes()


def unpack(blob: bytes) -> list[float]:
    """The inverse of :func:`pack`."""
    if len(blob) % 4:
        raise InvalidArgument("blob", f"length {len(blob)} is not a multiple of 4 (float32)")
    arr = array("f")
    arr.frombytes(blob)
    if sys.byteorder == "big":
        arr.byteswap()
    return arr.tolist()


def fuse(bm25_ranked_ids: Iterable[K], cosine_ranked_ids: Iterable[K], k: float = 60) -> dict[K, float]:
    """Reciprocal-rank fusion (Cormack, Clarke & Buettcher, SIGIR 2009) of two rankings, best first.

    Each id scores ``sum(1 / (k + rank))`` over the lists it appears in, with ``rank`` 1-based in that
    list; an id in only one list gets only that term, and a repeated id counts at its first (best) rank.
    Only ranks matter, so BM25 scores and cosines need no common scale. ``k`` (default 60, the
    paper's) damps the lead of the very top ranks; it must be >= 0. Returns ``{id: fused_score}``
    ordered by score descending; ties keep the order in which ids were first seen (BM25 list first).
    """
    scores = _rrf(bm25_ranked_ids, cosine_ranked_ids, k)
    return dict(sorted(scores.items(), key=lambda item: -item[1]))  # sorted() is stable: ties keep order


def _rrf(bm25_ranked_ids: Iterable[K], cosine_ranked_ids: Iterable[K], k: float) -> dict[K, float]:
    """id -> fused score, in the order ids were first seen (BM25 list first)."""
    if isinstance(k, bool) or not isinstance(k, int | float) or not math.isfinite(k) or k < 0:
        raise InvalidArgument("k", "must be a finite number >= 0", value=k)
    scores: dict[K, float] = {}
    for ranking in (bm25_ranked_ids, cosine_ranked_ids):
        seen: set[K] = set()
        rank = 0
        for item in ranking:
            if item in seen:
                continue
            seen.add(item)
            rank += 1
            scores[item] = scores.get(item, 0.0) + 1.0 / (k + rank)
    return scores


def fuse_page(
    bm25_ranked_ids: Iterable[K], cosine_ranked_ids: Iterable[K], *, k: float = 60, limit: int
) -> tuple[int, dict[K, float]]:
    """``fuse``'s first ``limit`` entries (the same scores, the same order, ties included), and how many it has.

    A page needs its first rows only. An id ranked below ``m`` in both lists scores at most
    ``2 / (k + m + 1)``, so once the page's last score beats that, only the ids within the first
    ``m`` of either list are scored and ordered; the rest are counted.
    """
    if isinstance(k, bool) or not isinstance(k, int | float) or not math.isfinite(k) or k < 0:
        raise InvalidArgument("k", "must be a finite number >= 0", value=k)
    first, second = _ranks(bm25_ranked_ids), _ranks(cosine_ranked_ids)
    total = len(first) + sum(1 for item in second if item not in first)
    if limit <= 0 or not total:
        return total, {}
    ones, twos = list(first), list(second)

    def key(item: K) -> tuple[float, int, int]:  # fuse's order: score descending, then first seen
        score = 0.0
        if item in first:
            score += 1.0 / (k + first[item])
        if item in second:
            score += 1.0 / (k + second[item])
        return (-score, 0, first[item]) if item in first else (-score, 1, second[item])

    m = max(limit, int(k) + 1) * 2
    while True:
        page = sorted(dict.fromkeys(ones[:m] + twos[:m]), key=key)[:limit]
        keys = [key(item) for item in page]
        whole = m >= len(ones) and m >= len(twos)
        if whole or (len(page) == limit and 2.0 * (1.0 / (k + m + 1)) < -keys[-1][0]):
            return total, {item: -kk[0] for item, kk in zip(page, keys, strict=True)}
        m *= 2


def _ranks(ranking: Iterable[K]) -> dict[K, int]:
    """id -> its 1-based rank, a repeated id at its first (best) rank and not counted again."""
    out: dict[K, int] = {}
    for item in ranking:
        if item not in out:
            out[item] = len(out) + 1
    return out
