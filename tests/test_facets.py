"""Filter facets: grep's filters answered from the records' facets, exactly as from the records.

Every filter form (kind, type with the ontology's aliases, tag, scope, lifecycle, combinations) on the
knowtk-format demo and on each profile fixture, through every way a process gets its snapshot: a full
build (records built), a new process on the stored image (facet columns), edits applied in that process
(its changed records over the columns, the allowed row sets patched), a new process that applies outside
edits to the image and writes a patch, and one more that reads the patched image. Each is compared with
a reference store built fresh (StatWalk, an empty state dir) whose expected sets are computed here from
its built records' own fields, not by the code under test.
"""

from __future__ import annotations

import json
import random
import re
import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import knowtk
from knowtk.query.common import RecordFilter
from knowtk.snapshot import image_write
from knowtk.snapshot.facets import Criteria, Facet, FacetColumns, encode_columns
from knowtk.snapshot.model import Snapshot
from knowtk.snapshot.overlay import Layered
from knowtk.snapshot.stored import StoredRecords
from tests.helpers import REPO
from tests.test_persist import reference

FIXTURES = REPO / "data" / "fixtures"
STORES = {  # name -> (fixture folder, profile)
    "demo": (FIXTURES / "demo", None),
    "plain": (FIXTURES / "profiles" / "plain", "plain"),
    "adr-tools": (FIXTURES / "profiles" / "adr-tools", "adr"),
    "madr": (FIXTURES / "profiles" / "madr", "adr"),
    "log4brains": (FIXTURES / "profiles" / "log4brains", "adr"),
    "vault": (FIXTURES / "profiles" / "vault", "obsidian"),
}
LIFECYCLES = ("active", "superseded", "all")


def copy_fixture(tmp_path: Path, name: str) -> Path:
    source, profile = STORES[name]
    root = tmp_path / name
    shutil.copytree(source, root)
    if profile is not None:  # in knowtk.yaml, so that the reference store opens with it too
        config = root / "knowtk.yaml"
        text = config.read_text(encoding="utf-8") if config.exists() else ""
        config.write_text(f"profile: {profile}\n{text}", encoding="utf-8")
    return root


def new_process(root: Path, state: Path) -> knowtk.Store:
    """A new Store on the same state dir: a new process (its scanner empty, the stored image loaded)."""
    return knowtk.open_store(root, state_dir=state)


# -- what is expected: from the reference's built records -----------------------------------------------
def expected_ids(snap: Snapshot, args: dict[str, Any]) -> set[str]:
    """The ids passing ``args``' filters, read from each built record's own fields."""
    types = None
    if args.get("type"):
        types = set().union(*(snap.config.expand_type(t) for t in args["type"]))
    scope = snap.normalize_scope(args.get("scope"))
    out = set()
    for rid, r in snap.records.items():
        if scope and not any(r.path.startswith(folder + "/") for folder in scope):
            continue
        if args.get("kind") and r.kind not in args["kind"]:
            continue
        if types is not None and r.type not in types:
            continue
        if args.get("tag") and not set(args["tag"]) <= set(r.tags):
            continue
        out.add(rid)
    return out


def filter_forms(snap: Snapshot) -> list[dict[str, Any]]:
    """Every form of filter the store's records allow: each kind, type (and alias), tag and folder, and mixes."""
    records = list(snap.records.values())
    kinds = sorted({r.kind for r in records})
    types = sorted({r.type for r in records} | {t for group in snap.config.type_groups.values() for t in group})
    types += sorted(snap.config.type_groups)
    tags = [t for t, _ in Counter(t for r in records for t in r.tags).most_common(8)]
    folders = sorted(snap.folders)
    forms: list[dict[str, Any]] = [{}]
    forms += [{"kind": [k]} for k in kinds] + [{"kind": kinds[:2]}]
    forms += [{"type": [t]} for t in types] + [{"type": types[:3]}, {"type": ["no-such-type"]}]
    forms += [{"tag": [t]} for t in tags] + [{"tag": tags[:2]}, {"tag": ["no-such-tag"]}]
    forms += [{"scope": f} for f in folders] + [{"scope": folders[:2]}]
    mixed = {"kind": kinds[:1], "type": types[:2], "tag": tags[:1], "scope": folders[:1]}
    forms += [{k: v for k, v in mixed.items() if v and k != drop} for drop in mixed]
    forms += [{"kind": kinds[-1:], "scope": folders[-1:]}, {"tag": tags[-1:], "type": types[-1:]}]
    return [{k: v for k, v in form.items() if v} for form in forms]


def query_words(snap: Snapshot) -> list[str]:
    words = Counter(w for r in snap.records.values() for w in re.findall(r"[a-z]{4,}", (r.title or "").lower()))
    common = [w for w, _ in words.most_common(3)]
    return [*common, " ".join(common)]


# -- the comparison --------------------------------------------------------------------------------------
def compare(tested: knowtk.Store, ref: knowtk.Store) -> None:
    """Facet sets, one record's facets and grep answers of ``tested`` equal those of ``ref`` for every form."""
    ref_snap = ref.snapshot()
    forms, words = filter_forms(ref_snap), query_words(ref_snap)
    for form in forms:  # grep first: the tested process's first filtered greps
        for lifecycle in LIFECYCLES:
            for i, word in enumerate(words):
                mode = "any" if " " in word else "all"
                got = answer(tested, word, mode=mode, lifecycle=lifecycle, **form)
                assert got == answer(ref, word, mode=mode, lifecycle=lifecycle, **form), (form, lifecycle, word, i)
    snap = tested.snapshot()
    facets = snap.facets()
    for form in forms:
        flt = RecordFilter.from_args(snap, _arguments(form))
        selected = list(facets.select(flt.criteria))
        assert len(selected) == len(set(selected)), form
        assert set(selected) == expected_ids(ref_snap, form), form
    for rid, r in ref_snap.records.items():
        assert facets.of(rid) == Facet(r.path.rpartition("/")[0], r.kind, r.type, r.tags), rid
    # every record once with its folder, kind and type (what knowledge_stats counts)
    want = sorted((rid, r.path.rpartition("/")[0], r.kind, r.type) for rid, r in ref_snap.records.items())
    assert sorted(facets.scalars()) == want
    assert set(ref_snap.records) == set(snap.records)


def _arguments(form: dict[str, Any]) -> dict[str, Any]:
    return {"kind": form.get("kind"), "type": form.get("type"), "tag": form.get("tag"), "scope": form.get("scope")}


def answer(store: knowtk.Store, query: str, **kwargs: Any) -> dict[str, Any]:
    try:
        found = store.grep(query, limit=50, **kwargs).to_dict()
    except knowtk.KnowtkError as exc:  # an argument refused: refused the same way by both
        return {"error": type(exc).__name__, "argument": getattr(exc, "argument", None)}
    found.pop("freshness", None)
    return found


def check(tested: knowtk.Store, root: Path, tmp_path: Path, label: str) -> None:
    ref = reference(root, tmp_path / f"ref-{label}", tested)
    try:
        compare(tested, ref)
    finally:
        ref.close()


# -- edits that change facets ----------------------------------------------------------------------------
def edit(root: Path, step: int) -> None:
    """Change the facets of a few records: a type to an alias, tags added, a file moved and one copied into
    a new folder (a copy of a knowtk-format record duplicates its id: both drop out), one deleted."""
    files = sorted(p for p in root.rglob("*.md") if ".knowtk" not in p.parts)
    for n, path in enumerate(files[step % 3 :: 7]):
        text = path.read_text(encoding="utf-8")
        if text.startswith("---\n") and "\n---" in text[3:]:
            head, _, body = text[4:].partition("\n---")
            head = re.sub(r"(?m)^type: note$", "type: memo", head)
            if not re.search(r"(?m)^tags:", head):
                head += f"\ntags: [facet-{step}, facet-{n % 2}]"
            path.write_text(f"---\n{head}\n---{body}", encoding="utf-8")
        else:  # a plain file without frontmatter: one with tags and a type
            path.write_text(f"---\ntype: edited\ntags: [facet-{step}]\n---\n{text}", encoding="utf-8")
    moved, copied, deleted = files[step % len(files)], files[(step + 5) % len(files)], files[(step + 9) % len(files)]
    target = root / f"fresh{step}" / "inner"
    target.mkdir(parents=True)
    shutil.copy(copied, target / f"copy-{copied.name}")
    moved.rename(root / f"fresh{step}" / moved.name)
    if deleted.exists():
        deleted.unlink()


def small_edit(root: Path) -> None:
    """One record's type and tags changed, one moved to another folder (its row kept, its scope changed)."""
    files = sorted(p for p in root.rglob("*.md") if ".knowtk" not in p.parts)
    edited, moved = files[len(files) // 2], files[len(files) // 3]
    text = edited.read_text(encoding="utf-8")
    if text.startswith("---\n"):
        text = re.sub(r"(?m)^(type|tags):.*$", "", text, count=2).replace(
            "---\n", "---\ntype: memo\ntags: [small]\n", 1
        )
    edited.write_text(text, encoding="utf-8")
    (root / "moved").mkdir(exist_ok=True)
    moved.rename(root / "moved" / moved.name)


# -- the tests -------------------------------------------------------------------------------------------
@pytest.mark.parametrize("name", sorted(STORES))
def test_filters_answer_from_facets_as_from_records(tmp_path: Path, name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(image_write, "PATCH_SHARE", 0)  # a patch however large beside these small images
    root, state = copy_fixture(tmp_path, name), tmp_path / "state"
    built = new_process(root, state)  # a full build: the records themselves
    check(built, root, tmp_path, "built")
    built.close()

    loaded = new_process(root, state)  # the stored image: facet columns, no patch
    assert isinstance(loaded.snapshot().records, StoredRecords)
    check(loaded, root, tmp_path, "loaded")
    loaded.close()

    edit(root, 1)  # outside edits: the next process applies them to the image and writes a patch
    applying = new_process(root, state)
    check(applying, root, tmp_path, "applying")
    applying.close()

    patched = new_process(root, state)  # the patched image: columns under the patches' facets
    snap = patched.snapshot()
    assert isinstance(snap.records, StoredRecords)
    assert snap.records.snapshot.parts.meta["patches"], "the image was written whole: no patch was tested"
    check(patched, root, tmp_path, "patched")
    edit(root, 2)  # edits in this process: its changed records over the patched columns, allowed sets patched
    check(patched, root, tmp_path, "edited")
    assert isinstance(patched.snapshot().records, Layered)
    small_edit(root)  # a few rows changed: each filter's row set is carried over, patched at the changed ids
    check(patched, root, tmp_path, "carried")
    patched.close()


def test_a_new_process_first_filtered_grep_builds_no_record(tmp_path: Path) -> None:
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    first = new_process(root, state)
    first.grep("search")  # builds, indexes and writes the image
    first.close()

    fresh = new_process(root, state)
    found = fresh.grep("search", kind="claim", tag="search", scope="claims", lifecycle="all", limit=3)
    hits = found.to_dict()["hits"]
    assert hits
    more = fresh.grep("review", type="note", kind=["page", "claim"], limit=1).to_dict()["hits"]
    snap = fresh.engine.snapshot()
    assert isinstance(snap.records, StoredRecords)
    assert snap.index is not None
    claimed = snap.index.id_at  # the files that hold a record (others are filled by the scan for their issues)
    filled = [path for path, entry in fresh.engine.scanner.files.items() if entry.filled and path in claimed]
    shown = {hit["path"] for hit in hits + more} | {hit["via"]["path"] for hit in hits + more if hit["via"]}
    assert set(filled) <= shown, "records were built that no hit shows"
    assert len(snap.records._records) <= len(shown)
    fresh.close()


def test_a_filter_answered_by_stored_position_reads_no_stored_id(tmp_path: Path) -> None:
    """A new process's first filters are answered from the facet columns and the rowmap by stored position: the
    stored ids (a JSON list of every id) are not parsed for them, and the answers are a fresh build's."""
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    first = new_process(root, state)
    first.grep("search")  # builds, indexes and writes the image
    first.close()
    loaded = new_process(root, state)
    forms: list[dict[str, Any]] = [{"kind": "claim"}, {"tag": "search"}, {"scope": "claims"}]
    got = [answer(loaded, "search", **args) for args in forms]
    records = loaded.engine._snapshot.records  # (not ``snapshot()``: outside a call it parses every part)
    assert isinstance(records, StoredRecords)
    assert "record_ids" not in records._parts.parsed
    ref = reference(root, tmp_path / "ref", loaded)  # (it reads every part of the image)
    assert got == [answer(ref, "search", **args) for args in forms]
    assert all(found["hits"] for found in got)
    facets = loaded.snapshot().facets()
    for rid, r in ref.snapshot().records.items():  # (one record's facets: the ids read now)
        assert facets.of(rid) == Facet(r.path.rpartition("/")[0], r.kind, r.type, r.tags), rid
    assert "record_ids" in records._parts.parsed
    ref.close()
    loaded.close()


def test_stored_ids_of_another_length_are_refused_when_read() -> None:
    ids = [f"r{i}" for i in range(5)]
    data = encode_columns(Facet("a", "page", "t", ("x",)) for _ in ids)
    short = FacetColumns(data, lambda: ids[:-1], {}, base="digest")
    found = short.positions(Criteria(kinds=("page",)))  # (by position: the ids are not read)
    assert found is not None and found.size == 5
    with pytest.raises(ValueError, match="does not match the stored ids"):
        short.select(Criteria(kinds=("page",)))
    with pytest.raises(ValueError, match="does not match the stored ids"):
        FacetColumns(data, ids[:-1], {})


def test_a_time_range_still_reads_the_records(tmp_path: Path) -> None:
    """A time filter reads each record's dates: not a facet, the records answer it (and agree)."""
    root, state = copy_fixture(tmp_path, "demo"), tmp_path / "state"
    new_process(root, state).close()
    loaded = new_process(root, state)
    ref = reference(root, tmp_path / "ref", loaded)
    args = {"kind": "claim", "time_field": "occurred_at", "since": "2025-09-01", "until": "2025-10-31"}
    assert answer(loaded, "search", **args) == answer(ref, "search", **args)
    assert answer(loaded, "search", **args)["hits"]
    ref.close()
    loaded.close()


def test_stored_columns_select_as_each_facet_passes() -> None:
    """Random facets through the stored form (packed columns, flat tags) and patches over them: select and of
    as ``Criteria.passes`` on each facet, for random criteria."""
    rng = random.Random(7)
    folders, tags = ["", "a", "a/b", "ab", "c/d/e"], ["x", "y", "z", "w"]

    def one() -> Facet:
        picked = tuple(rng.sample(tags, rng.randint(0, 3)))
        return Facet(rng.choice(folders), rng.choice(["page", "claim"]), rng.choice(["t1", "t2", "t3"]), picked)

    ids = [f"r{i}" for i in range(300)]
    stored = {rid: one() for rid in ids}
    over: dict[str, Facet | None] = {rid: (one() if rng.random() < 0.5 else None) for rid in rng.sample(ids, 30)}
    over["new"] = one()
    data = json.loads(json.dumps(encode_columns(stored[rid] for rid in ids)))
    columns = FacetColumns(data, ids, dict(over), base="digest")
    current = {**stored, **over}
    for rid, f in current.items():
        if f is None:
            with pytest.raises(KeyError):
                columns.of(rid)
        else:
            assert columns.of(rid) == f
    for _ in range(300):
        criteria = Criteria(
            scope=tuple(rng.sample(["a", "ab", "c", "c/d"], rng.randint(0, 2))),
            kinds=rng.choice([None, ("page",), ("claim", "page")]),
            types=rng.choice([None, frozenset({"t1"}), frozenset({"t2", "t3"}), frozenset({"none"})]),
            tags=rng.choice([None, ("x",), ("x", "y"), ("y", "y"), ("absent",), ()]),
        )
        selected = columns.select(criteria)
        assert columns.selected(criteria) == set(selected)
        assert len(selected) == len(set(selected))
        assert set(selected) == {rid for rid, f in current.items() if f is not None and criteria.passes(f)}
        # by stored position: the flagged positions' ids but those set apart, and the extra ones
        found = columns.positions(criteria)
        assert found is not None and found.base == "digest" and found.size == len(ids)
        flags = found.flags if found.flags is not None else bytes([1]) * len(ids)
        assert len(flags) == len(ids) and set(flags) <= {0, 1}
        by_position = {rid for rid, flag in zip(ids, flags, strict=True) if flag and rid not in found.apart}
        assert by_position | set(found.extra) == set(selected)
    assert FacetColumns(data, ids, {}).positions(Criteria()) is None  # (no stored ids' digest: not by position)


def test_stored_columns_parse_as_json_does_whatever_the_vocabularies_hold() -> None:
    """``loads_columns`` cuts the packed columns out before parsing: folders, kinds, types and tags that spell
    the columns' keys, quotes or base64 parse exactly as ``json.loads`` parses them; a text without the columns
    is parsed whole."""
    from knowtk.snapshot.facets import PACKED, loads_columns

    rng = random.Random(41)
    tricky = ['"kind_at": ["B", "', '["B", "', 'tags_end": ["I", "AAAA', "a\\\\b", "é✓", "", 'x"', "]}"]
    for _ in range(200):
        facets = [
            Facet(
                rng.choice(tricky), rng.choice(tricky), rng.choice(tricky), tuple(rng.sample(tricky, rng.randint(0, 3)))
            )
            for _ in range(rng.randint(0, 300))
        ]
        text = json.dumps(encode_columns(facets), ensure_ascii=False).encode()
        assert loads_columns(text) == json.loads(text)
    whole = json.loads(text)
    for name in PACKED:  # (a column missing, or not packed: parsed whole, as it is)
        for value in ([], ["B"], "x", ["B", 3]):
            changed = json.dumps({**whole, name: value}).encode()
            assert loads_columns(changed) == json.loads(changed)
