"""Citations you can trust: sha256 of the bytes read, UTF-16 snippet offsets, file line ranges, evidence."""

from __future__ import annotations

import builtins
import hashlib

import pytest

from tests.helpers import StoreBuilder


def utf16(text: str) -> bytes:
    return text.encode("utf-16-le")


def check_snippet(builder: StoreBuilder, hit: dict) -> None:
    """The snippet is the field's text at its UTF-16 offsets, and its lines are the file's lines."""
    sn = hit["snippet"]
    data = (builder.root / hit["path"]).read_bytes()
    assert hit["sha256"] == hashlib.sha256(data).hexdigest() == hit["citation"]["sha256"]
    assert len(utf16(sn["text"])) // 2 <= 480
    assert sn["end"] - sn["start"] == len(utf16(sn["text"])) // 2
    text = data.decode("utf-8")
    if sn["field"] == "body":
        body = text.split("\n---\n", 1)[1]
        assert utf16(body)[2 * sn["start"] : 2 * sn["end"]] == utf16(sn["text"])
        lines = text.split("\n")[sn["lineStart"] - 1 : sn["lineEnd"]]
        assert sn["text"].strip().split("\n")[0] in lines[0]
        assert sn["text"].strip().split("\n")[-1] in lines[-1]
        assert (hit["citation"]["lineStart"], hit["citation"]["lineEnd"]) == (sn["lineStart"], sn["lineEnd"])
    else:
        assert sn["lineStart"] is None and sn["lineEnd"] is None


def test_body_snippet_offsets_and_lines(builder: StoreBuilder) -> None:
    body = "Intro line.\n\n" + "filler words here. " * 40 + "\nThe zebra crossed.\nAfter.\n" + "tail " * 200
    builder.page("a", "Title", body, tags=["x"], summary="s")
    hit = builder.open().grep("zebra").to_dict()["hits"][0]
    assert hit["snippet"]["matchLocated"] is True and hit["snippet"]["field"] == "body"
    assert "zebra" in hit["snippet"]["text"]
    check_snippet(builder, hit)
    assert hit["snippet"]["lineStart"] > 6  # the frontmatter lines are counted


def test_offsets_count_utf16_code_units(builder: StoreBuilder) -> None:
    body = "😀 emoji 𝔘𝔫𝔦𝔠𝔬𝔡𝔢 and accents é " * 30 + "\nthe zebra 😀 here\n" + "😀 " * 400
    builder.page("a", "Title", body)
    hit = builder.open().grep("zebra").to_dict()["hits"][0]
    check_snippet(builder, hit)
    assert hit["snippet"]["start"] > len(body.split("\nthe zebra")[0]) - 200  # UTF-16 units, not code points


def test_title_and_alias_snippets(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra in the title")
    builder.page("b", "Other", aliases=["first alias", "the zebra alias"])
    res = builder.open().grep("zebra").to_dict()
    by_id = {h["id"]: h for h in res["hits"]}
    assert by_id["a"]["snippet"]["field"] == "title" and by_id["a"]["snippet"]["text"] == "Zebra in the title"
    sn = by_id["b"]["snippet"]
    assert sn["field"] == "aliases" and sn["text"] == "the zebra alias"
    assert (sn["start"], sn["end"]) == (len("first alias\n"), len("first alias\nthe zebra alias"))
    for hit in res["hits"]:
        check_snippet(builder, hit)
        assert hit["citation"]["lineStart"] == 1  # the frontmatter, where titles and aliases live


def test_bodies_over_64_kib_give_an_opening_excerpt(builder: StoreBuilder) -> None:
    big = "Opening words of a long log.\n" + "line of the log\n" * 5000 + "zebra at the end\n"
    assert len(big.encode()) > 64 * 1024
    builder.page("big", "Lab log", big)
    hit = builder.open().grep("zebra").to_dict()["hits"][0]
    sn = hit["snippet"]
    assert sn["matchLocated"] is False and sn["start"] == 0
    assert sn["text"].startswith("Opening words") and "zebra" not in sn["text"]
    assert hit["matches"] == ["body"]
    check_snippet(builder, hit)


def test_snippets_never_exceed_480_units(builder: StoreBuilder) -> None:
    builder.page("a", "T", "x" * 3000 + " zebra " + "y" * 3000)
    builder.page("b", "T2", "word " * 2000 + "zebra")
    for hit in builder.open().grep("zebra").to_dict()["hits"]:
        check_snippet(builder, hit)


@pytest.fixture
def evidenced(builder: StoreBuilder):
    builder.write(
        "notes/standup.md",
        {"id": "standup", "kind": "page", "title": "Standup"},
        "Line one.\nFTS5 wins, said Ada.\nLine three.\n",
    )
    # file lines: 1 ---, 2 id, 3 kind, 4 title, 5 ---, 6 Line one., 7 FTS5 wins..., 8 Line three.
    good = {"path": "notes/standup.md", "lines": [7, 7], "quote": "FTS5 wins"}
    evidence = [
        good,
        {"path": "notes/standup.md", "lines": [6, 8], "quote": "said   Ada"},
        {"path": "notes/standup.md", "lines": [6, 6], "quote": "FTS5 wins"},  # wrong lines
        {"path": "notes/missing.md", "lines": [1, 1], "quote": "x"},
        {"path": "../outside.md", "lines": [1, 1], "quote": "secret"},
        {"path": "/etc/passwd", "lines": [1, 1], "quote": "root"},
        {"path": "notes/standup.md", "lines": [7, 7], "quote": "FTS5"},
        {"path": "notes/standup.md", "lines": [7, 7], "quote": "Ada"},
        {"path": "notes/standup.md", "lines": [99, 100], "quote": "Ada"},
    ]
    (builder.root.parent / "outside.md").write_text("secret\n")
    builder.page("c", "Zebra claim", "zebra", kind="claim", evidence=evidence, source="standup")
    return builder


def test_at_most_three_verified_evidence_locators(evidenced, monkeypatch) -> None:
    opened = []
    real_open = builtins.open

    def spy(file, *args, **kwargs):
        opened.append(str(file))
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    hit = evidenced.open().grep("zebra").to_dict()["hits"][0]
    assert len(hit["evidence"]) == 3
    assert all(e["verified"] for e in hit["evidence"])
    assert [e["quote"] for e in hit["evidence"]] == ["FTS5 wins", "said   Ada", "FTS5"]
    assert hit["evidenceTruncated"] is True
    expected_sha = hashlib.sha256((evidenced.root / "notes/standup.md").read_bytes()).hexdigest()
    assert hit["evidence"][0]["sha256"] == expected_sha
    assert not any(p.endswith("outside.md") or p == "/etc/passwd" for p in opened)


def test_knowledge_record_shows_every_locator_with_why_unverified(evidenced) -> None:
    ev = evidenced.open().call("knowledge_record", {"id": "c"})["record"]["evidence"]
    assert [(e["verified"], e["reason"]) for e in ev] == [
        (True, None),
        (True, None),
        (False, "quote_not_found"),
        (False, "file_missing"),
        (False, "outside_store"),
        (False, "outside_store"),
        (True, None),
        (True, None),
        (False, "lines_out_of_range"),
    ]
    assert ev[4]["sha256"] is None  # never read


def test_no_evidence_is_not_truncated(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra")
    hit = builder.open().grep("zebra").to_dict()["hits"][0]
    assert hit["evidence"] == [] and hit["evidenceTruncated"] is False


def test_attribution_and_origin(builder: StoreBuilder) -> None:
    builder.page("a", "Zebra", kind="claim", author="Ada Lovelace", origin="observed")
    hit = builder.open().grep("zebra").to_dict()["hits"][0]
    assert hit["attribution"] == "Ada Lovelace" and hit["origin"] == "observed"
    assert list(hit) == [
        "id",
        "kind",
        "type",
        "title",
        "summary",
        "lifecycle",
        "tags",
        "path",
        "revision",
        "sha256",
        "score",
        "matches",
        "snippet",
        "citation",
        "evidence",
        "evidenceTruncated",
        "attribution",
        "origin",
        "via",
    ]
    assert list(hit["snippet"]) == ["text", "field", "start", "end", "lineStart", "lineEnd", "matchLocated"]
    assert list(hit["citation"]) == ["id", "path", "revision", "sha256", "lineStart", "lineEnd"]


def _spans_by_character(highlighted: str, original: str) -> list[tuple[int, int]] | None:
    """The reference: highlight() output read one character at a time (the plain way ``spans`` must agree with)."""
    from knowtk.index.fts_tables import HIGHLIGHT_CLOSE, HIGHLIGHT_OPEN

    out, plain, start, pos = [], [], None, 0
    for ch in highlighted:
        if ch == HIGHLIGHT_OPEN:
            start = pos
        elif ch == HIGHLIGHT_CLOSE and start is not None:
            out.append((start, pos))
            start = None
        else:
            plain.append(ch)
            pos += 1
    return out if "".join(plain) == original else None


def test_spans_reads_only_the_marks_and_agrees_with_a_character_walk() -> None:
    """Marks paired, nested, unclosed, a close mark alone (text), marks in the original, astral characters."""
    import random

    from knowtk.index.fts_tables import HIGHLIGHT_CLOSE as C
    from knowtk.index.fts_tables import HIGHLIGHT_OPEN as O
    from knowtk.query.citations import spans

    cases = [
        ("", ""),
        ("plain", "plain"),
        ("plain", "other"),
        (f"a {O}zebra{C} b", "a zebra b"),
        (f"{O}x{C}{O}y{C}", "xy"),
        (f"{O}a{O}b{C}c{C}", "abc" + C),  # an open mark again moves the start; the second close is text
        (f"{O}a{O}b{C}c{C}", "abc"),
        (f"{C}a{O}b{C}", C + "ab"),  # a close mark first is part of the text
        (f"{O}ab", "ab"),  # never closed: no span
        (f"x{O}😀é{C}y", "x😀éy"),
        (f"a {O}zebra{C} b", "a zebra c"),
        (f"a {O}zebra{C} b", f"a {O}zebra b"),
    ]
    rng = random.Random(20)
    alphabet = ["a", " ", "é", "😀", "\n", O, C]
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randrange(0, 14)))
        plain = "".join(ch for ch in text if ch not in (O, C))
        cases.append((text, rng.choice([plain, plain + "a", plain.replace(" ", "", 1), text])))
    for highlighted, original in cases:
        assert spans(highlighted, original) == _spans_by_character(highlighted, original), (highlighted, original)


def _window_by_character(text: str, first: tuple[int, int]) -> tuple[int, int]:
    """The reference: the snippet window found one character at a time (the plain way ``_window`` must agree with)."""
    from knowtk.query.citations import CONTEXT_BEFORE, SNIPPET_UNITS, utf16_len

    start = max(0, first[0] - CONTEXT_BEFORE)
    if start > 0:
        space = next((i for i in range(start, first[0]) if text[i].isspace()), None)
        start = space + 1 if space is not None else start
    while start < first[0] and text[start].isspace():
        start += 1
    end = min(len(text), start + SNIPPET_UNITS)
    while utf16_len(text[start:end]) > SNIPPET_UNITS:
        end -= 1
    if end < len(text):
        cut = max((i for i in range(max(first[1], start), end) if text[i].isspace()), default=None)
        if cut is not None and cut > first[1]:
            end = cut
    return start, end


def test_the_snippet_window_agrees_with_a_character_walk() -> None:
    """Whitespace of every kind (tabs, no-break and ideographic spaces, line separators), astral text, long words."""
    import random

    from knowtk.query import citations

    rng = random.Random(20)
    alphabet = ["a", "b", " ", "\t", "\n", "\u00a0", "\u3000", "\u2028", "\x1c", "😀", "é", "-"]
    for _ in range(2000):
        n = rng.choice([5, 50, 300, 700, 1500])
        weights = [rng.random() for _ in alphabet]
        text = "".join(rng.choices(alphabet, weights, k=n))
        a = rng.randrange(0, n)
        first = (a, min(n, a + rng.randrange(0, 30)))
        assert citations._window(text, first) == _window_by_character(text, first), (text, first)
