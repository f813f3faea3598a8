"""Write notebooks 01, 02, 04, 05 and 06 from the cells below and execute them, so they are stored with outputs.

    python scripts/make_notebooks.py               # write and execute (as GitHub shows them)
    python scripts/make_notebooks.py --no-execute  # write the cells only

Edit the cells here, not the .ipynb files: tests/test_notebooks.py checks that the committed
notebooks' sources match this script, and executes every notebook in notebooks/ afresh.
notebooks/03_dates_and_chronicle.ipynb is written by hand and left alone.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from textwrap import dedent

import nbformat
from nbclient import NotebookClient

REPO = Path(__file__).resolve().parent.parent
NOTEBOOKS = REPO / "notebooks"
TIMEOUT = 300  # seconds per cell

Cell = tuple[str, str]  # ("md" | "code", source)

STORE_VARIABLE = """\
# the store this notebook works on: a folder; None takes $KNOWTK_STORE, else the demo store of the knowtk
# checkout the notebook runs in (data/fixtures/demo, in the working directory or a folder above it)
STORE = None"""

# a notebook that edits a scratch copy of the demo store shows that the bundled one stayed untouched
DIGEST = """\
def digest(root):
    \"\"\"One hash over every Markdown file's path and bytes (to show the bundled store stays untouched).\"\"\"
    h = hashlib.sha256()
    for p in sorted(root.rglob("*.md")):
        h.update(p.relative_to(root).as_posix().encode() + b"\\0" + p.read_bytes())
    return h.hexdigest()"""

SETUP = f"""\
import tempfile

import pandas as pd

import knowtk
from knowtk.notebook import find_path

{STORE_VARIABLE}

pd.set_option("display.max_colwidth", 90)
DEMO = find_path(STORE)
# read_only: this notebook changes no file, and its widgets offer no change action (notebook 07 changes a copy);
# state_dir: the index goes to a temporary folder, so running this notebook writes nothing into the store's folder
store = knowtk.open_store(DEMO, state_dir=tempfile.mkdtemp(prefix="knowtk-"), read_only=True)
print(f"store {{store.name!r}}: {{store.records(limit=1)['total']}} active records")"""

PROTOTYPING_SETUP = f"""\
import hashlib

import frontmatter

import knowtk
from knowtk.notebook import GrepWidget, diff_frame, find_path, scratch_copy

{STORE_VARIABLE}


{DIGEST}


DEMO = find_path(STORE)
before = digest(DEMO)
work = scratch_copy(DEMO)  # a copy in a temporary folder: this notebook edits it, never the store it came from
store = knowtk.open_store(work)  # its state may live inside the copy
print("working copy:", work, "·", store.records(limit=1)["total"], "active records")"""


def md(text: str) -> Cell:
    return ("md", dedent(text).strip())


def code(text: str) -> Cell:
    return ("code", dedent(text).strip())


QUICKSTART: list[Cell] = [
    md("""
    # 01 · Quickstart

    knowtk explores a *knowledge store*: a folder of Markdown records with YAML frontmatter. This
    notebook opens the bundled demo store (`data/fixtures/demo/`, a fictional research team),
    searches it, looks records up, asks why a record is (not) in an answer, and shows the two
    notebook widgets. Every view below is built on the same `Result` objects the Python API returns.
    """),
    ("code", SETUP),
    md("""
    ## Keyword search

    `store.grep(query)` is BM25 over title (weight 8), aliases (6) and body (1); every word must
    match unless `mode="any"`. It returns a `Result`: `.to_dict()` is the contract's dict (what
    `store.call("knowledge_grep", ...)` returns), `.to_frame()` a DataFrame with stable columns.
    """),
    code("""
    res = store.grep("vector index")
    print(res.summary())
    res.to_frame()[["rank", "id", "title", "score", "matches", "snippet_field", "line_start", "line_end"]]
    """),
    md("""
    ## Superseded wording

    An active search also matches the superseded records it hides, and returns their current
    replacement. The demo's decision on similar-passage search went through four versions; the
    first spoke of *columnar* Parquet shards. Searching that word finds the current decision,
    with the earlier record it was reached through (`via_*`) and no score:
    """),
    code("""
    store.grep("columnar").to_frame()[["rank", "id", "title", "score", "matches", "via_id", "via_title"]]
    """),
    md("""
    ## Why is it (not) here?

    `store.explain(id, query=...)` runs the same query and says whether the record matched (rank,
    fields, score), came back as a replacement, or which rule kept it out.
    """),
    code("""
    asked = [
        ("dec-2026-021", "vector index"),  # a direct hit
        ("dec-2026-021", "columnar"),  # returned for an earlier version of it
        ("dec-2025-012", "columnar"),  # that earlier version: superseded, so hidden
        ("dec-2025-009", "GPU budget"),  # superseded, and its chain ends at a missing record
        ("fnd-2026-006", "speaker"),  # depends on a withdrawn finding
        ("note-retention-policy-faq", "vector index"),  # eligible, but the words are not there
    ]
    answers = [store.explain(rid, query=q) for rid, q in asked]
    columns = ("id", "query", "status", "rule", "rank", "message")
    pd.DataFrame([{k: ex[k] for k in columns} for ex in answers]).convert_dtypes()
    """),
    md("""
    ## The grep widget

    `GrepWidget(store)` puts the same call behind controls: query, mode, kind/type/tag/lifecycle/
    scope and date filters, pages that follow `nextOffset`, one compact row per hit with the query's
    words highlighted (the full title on hover). Type a query and press Enter; click a row and the
    record opens directly under it, whole, with its citation and why it is there. The answer's
    coverage issues are listed, not hidden; a refused input (say since `2026-13-45`) replaces the
    answer with the reason. Where widgets do not run (GitHub), the output is a static copy of the
    widget's state. The store is open read-only here, so the widgets offer no change action:
    notebook 07 changes a copy.
    """),
    code("""
    from knowtk.notebook import GrepWidget, LookupWidget

    grep = GrepWidget(store, "search", limit=5)
    grep
    """),
    md("""
    A widget is a plain Python object too: set its controls, click its buttons, read its answer
    (`.result` is the `Result`, `.frame` its DataFrame).
    """),
    code("""
    grep.type.value = "decision"  # a filter: the search runs again from the first page
    grep.next_button.click()  # the next page, by nextOffset
    print(grep.result.summary(), "· offset", grep.result["offset"], "· selected", grep.select.value)
    grep.frame[["rank", "id", "title", "score", "via_id"]]
    """),
    md("""
    ## Exact lookup

    `store.lookup(text)` matches an id exactly, or a full title or alias after normalisation, never
    fuzzily: `found`, `ambiguous` (with every candidate) or `missing`, each shown its own way.
    """),
    code("""
    LookupWidget(store, "Sam")
    """),
    md("""
    A superseded id is not an eligible answer, so lookup says `missing`; the widget adds that the
    id exists, is superseded, and which current record its chain ends at (one click looks it up):
    """),
    code("""
    LookupWidget(store, "dec-2025-012")
    """),
    code("""
    rows = []
    for q in ("dec-2026-021", "IVF index decision", "Sam", "Sam Reyes"):
        found = store.lookup(q)
        rows.append({"query": q, "status": found["status"], "matched by": found["matchedBy"],
                     "candidates": ", ".join(c["id"] for c in found["candidates"])})
    pd.DataFrame(rows).convert_dtypes()
    """),
    md("""
    ## One record, whole

    `store.record(id)` returns everything: lifecycle, supersession links both ways, every evidence
    locator (verified against the cited file), the body, and the citation to quote: path,
    revision, SHA-256 of the bytes read, and lines.
    """),
    code("""
    rec = store.record("dec-2026-021")["record"]
    print(rec["title"], "·", rec["lifecycle"], "· revision", rec["revision"], "· supersedes", rec["supersedes"])
    print("cite:", rec["citation"])
    evidence = pd.DataFrame(rec["evidence"])
    evidence.assign(sha256=evidence["sha256"].str[:12])  # 12 hex digits tell files apart; the quote keeps its room
    """),
    md("""
    ## Coverage

    The demo store carries deliberate defects (see its `_README.md`). Every answer lists them in
    `coverage.issues` and says `coverage.complete: false`; excluded records never appear silently.
    """),
    code("""
    print("complete:", res["coverage"]["complete"])
    pd.DataFrame(res["coverage"]["issues"])[["code", "path", "id"]]
    """),
    md("""
    ## Long bodies

    For bodies over 64 KiB the snippet is the body's opening, not the match location
    (`match_located` is false); the citation still names the record and its hash.
    """),
    code("""
    store.grep("zebrafish").to_frame()[["id", "title", "snippet_field", "match_located", "line_start", "line_end"]]
    """),
    md("""
    ## knowl_query

    The project-knowledge surface over the same store and index: three items by default, content
    cut at 2,000 characters, `score` min-max scaled over the page (order by it) and, when the
    `semantic` extra is installed, `cosine` on an absolute scale (judge by it). Without the extra,
    `score` says `uncalibrated (...)` (and the frame's `score` is empty): `explain=True` adds the raw
    BM25 (`bm25`) and its per-field parts, which the widget shows in its place.
    """),
    code("""
    from knowtk.notebook import KnowlWidget

    answer = store.knowl("vector index sqlite", explain=True)
    print("ranking:", answer["ranking"]["method"], "·", answer["ranking"]["score"])
    answer.to_frame()[["id", "title", "score", "cosine", "bm25", "truncated", "category", "status"]]
    """),
    code("""
    KnowlWidget(store, "vector index sqlite")
    """),
]

SUPERSESSION: list[Cell] = [
    md("""
    # 02 · Supersession review

    Records replace each other with `status: superseded` and `superseded_by`. A reviewer wants
    every chain at a glance: earlier → current, and the chains that end in nothing (a withdrawn or
    missing record, a cycle), because an active search returns nothing for words that only those
    records hold. Everything here reads the snapshot the queries read.
    """),
    ("code", SETUP),
    md("""
    ## Every chain of the store

    `chain_edges(store)` has one row per superseded → superseded_by edge; `chain_summary` folds it
    into one row per chain, dead ends first.
    """),
    code("""
    from knowtk.notebook import plot_chains
    from knowtk.query.chains import chain_edges, chain_summary

    edges = chain_edges(store)
    chain_summary(edges)
    """),
    code("""
    plot_chains(edges);
    """),
    md("""
    The edges frame is exactly what `plot_chains` draws: both ends'
    lifecycle, revision and date, whether the edge lies on a cycle, and how its chain ends.
    `readable_edges` writes the dates as a person does (a date-only value as its date):
    """),
    code("""
    from knowtk.notebook import readable_edges

    readable_edges(edges)[["chain", "from_id", "from_revision", "from_date", "to_id", "to_revision",
                           "to_lifecycle", "cycle", "chain_end"]]
    """),
    md("""
    ## One record's chain

    Name any record of a chain (earlier, current or in between) to get the whole chain, both ways:
    """),
    code("""
    one = chain_edges(store, "dec-2025-027")
    one[["chain", "from_id", "from_title", "to_id", "to_title", "to_lifecycle", "chain_end"]]
    """),
    code("""
    plot_chains(one, title="Supersession chain of dec-2025-027");
    """),
    md("""
    ## What a dead end costs a search

    `store.explain` says it for one record and one query: a superseded record whose chain reaches
    a current record is replaced by it; one whose chain ends in nothing is simply gone.
    """),
    code("""
    asked = [
        ("dec-2025-012", "columnar"),
        ("dec-2026-021", "columnar"),
        ("dec-2025-009", "GPU budget"),
        ("dec-2025-018", "archive"),
        ("lab-dec-005", "standup"),
    ]
    answers = [store.explain(rid, query=q) for rid, q in asked]
    pd.DataFrame([{k: ex[k] for k in ("id", "query", "status", "rule", "message")} for ex in answers]).convert_dtypes()
    """),
    md("""
    ## Searching the earlier versions directly

    `lifecycle="superseded"` searches only superseded records and follows no replacements;
    `"all"` searches active and superseded records together.
    """),
    code("""
    pd.concat(
        {lc: store.grep("columnar", lifecycle=lc).to_frame()[["rank", "id", "lifecycle", "score", "via_id"]]
         for lc in ("active", "superseded", "all")},
        names=["lifecycle searched", "row"],
    )
    """),
    md("""
    ## What the snapshot reported about chains
    """),
    code("""
    issues = pd.DataFrame(store.records(limit=1)["coverage"]["issues"])
    issues[issues["code"].str.startswith(("supersession", "stale"))][["code", "id", "message"]]
    """),
    md("""
    ## The chain widget

    `ChainWidget(store)` draws the chains of the store or of the record picked in its menu, with
    the summary and the edges beneath.
    """),
    code("""
    from knowtk.notebook import ChainWidget

    ChainWidget(store, "dec-2026-015")
    """),
]

PROTOTYPING: list[Cell] = [
    md("""
    # 04 · Prototyping query behaviour

    Change a record, run the same query again, see what moved. This notebook works on a *copy* of
    the demo store in a temporary folder, so `data/fixtures/demo/` is never edited. The edits use
    python-frontmatter, as a script or an editor would; the grep widget keeps the last two answers
    of the same query and shows new, removed and moved hits.
    """),
    ("code", PROTOTYPING_SETUP),
    md("""
    ## The query

    Five records mention the retention policy:
    """),
    code("""
    w = GrepWidget(store, "retention policy")
    w.frame[["rank", "id", "title", "score", "matches"]]
    """),
    md("""
    ## Edit 1: give a record an alias

    The privacy checklist gains the alias *Retention policy checklist*. Aliases weigh 6 against the
    body's 1, so it should enter near the top and push the others down.
    """),
    code("""
    path = work / "notes" / "privacy-checklist.md"
    post = frontmatter.load(path)
    post["aliases"] = ["Retention policy checklist"]
    frontmatter.dump(post, path)

    w.refresh()  # the same query on the same page: .diff compares it with the previous answer
    print({k: w.diff[k] for k in ("new", "removed", "moved")})
    diff_frame(w.diff)
    """),
    md("""
    ## Edit 2: supersede the FAQ

    A new note replaces the FAQ. It never says *retention policy*, yet the query still finds it,
    through the FAQ it supersedes (superseded wording):
    """),
    code("""
    note = frontmatter.Post(
        "# Raw data handling\\n\\nRaw audio and video are deleted once the transcript is checked.\\n",
        id="note-raw-data-handling", kind="page", type="memo", title="Raw data handling",
        tags=["privacy"], author="Uma Krishnan",
    )
    frontmatter.dump(note, work / "notes" / "raw-data-handling.md")
    faq_path = work / "notes" / "retention-policy-faq.md"
    faq = frontmatter.load(faq_path)
    faq["status"], faq["superseded_by"] = "superseded", "note-raw-data-handling"
    frontmatter.dump(faq, faq_path)

    w.refresh()
    for rid in ("note-raw-data-handling", "note-retention-policy-faq"):
        print(rid, "→", store.explain(rid, query="retention policy")["message"])
    diff_frame(w.diff)
    """),
    md("""
    ## Edit 3: withdraw the replacement

    Now the FAQ's chain ends at a withdrawn record, and an active search returns nothing for it.
    """),
    code("""
    note_path = work / "notes" / "raw-data-handling.md"
    note = frontmatter.load(note_path)
    note["status"] = "withdrawn"
    frontmatter.dump(note, note_path)

    w.refresh()
    print(store.explain("note-retention-policy-faq", query="retention policy")["message"])
    diff_frame(w.diff)
    """),
    md("""
    ## Undoing a withdrawal does not bring it back

    The store's state remembers withdrawals, so that a stale copy of a file cannot resurrect a
    withdrawn record. Setting the file back to active is reported, and ignored:
    """),
    code("""
    note["status"] = "active"
    frontmatter.dump(note, note_path)
    ex = store.explain("note-raw-data-handling", query="raw data")
    print(ex["status"], ex["rule"], "—", ex["message"])
    """),
    md("""
    ## The widget after the edits

    The rows, the selected record and why it is there under its row, and, at the bottom, what the
    last re-run changed (new, removed and moved hits). The widget offers Edit fields, Supersede by…
    and Withdraw under the selected record, because this store is a scratch copy.
    """),
    code("""
    w
    """),
    md("""
    ## The store it was copied from is untouched
    """),
    code("""
    print("the store it was copied from is unchanged:", digest(DEMO) == before)
    """),
]

PEPS: list[Cell] = [
    md("""
    # 05 · A real corpus: the PEPs

    The Python Enhancement Proposals as a knowtk store: 736 PEP pages and 364 person pages, 21
    PEPs superseded by others. Point the notebook at it with `PEPS_STORE` in the first cell or the
    environment variable `KNOWTK_PEPS` (by default it looks for `shared/corpora/peps` beside the
    checkout). It is opened read-only, with its state in a temporary folder (`state_dir`). Without
    the store, this notebook says so and skips its cells.
    """),
    code("""
    import tempfile

    import matplotlib.pyplot as plt
    import pandas as pd

    import knowtk
    from knowtk.notebook import find_path, plot_chains
    from knowtk.query.chains import chain_edges, chain_summary

    # the PEPs store: its folder; None takes $KNOWTK_PEPS, else shared/corpora/peps in the working directory or a
    # folder above it (beside a knowtk checkout). Without it, this notebook says so and skips its cells.
    PEPS_STORE = None

    pd.set_option("display.max_colwidth", 90)
    PEPS = find_path(PEPS_STORE, env="KNOWTK_PEPS", default="shared/corpora/peps", required=False)
    if PEPS is not None:
        store = knowtk.open_store(PEPS, state_dir=tempfile.mkdtemp(prefix="knowtk-peps-"), read_only=True)
        print(f"store {store.name!r}: {store.records(limit=1)['total']} active records")
    else:
        store = None
        print("No PEPs store: set PEPS_STORE above (or KNOWTK_PEPS) to its folder. This notebook skips its cells.")
    """),
    md("""
    ## Search

    Bodies are the PEPs' reStructuredText, verbatim. Titles weigh most, so PEPs *about* type hints
    come first:
    """),
    code("""
    if store is not None:
        hits = store.grep("type hints", limit=10)
        print(hits.summary())
        display(hits.to_frame()[["rank", "id", "title", "type", "score", "matches"]])
    """),
    md("""
    ## Lookup

    Every PEP has the aliases `PEP N` and `PEP NNNN`; lookup is exact, never fuzzy.
    """),
    code("""
    if store is not None:
        rows = []
        for q in ("PEP 484", "pep-0484", "type hints", "PEP 9999"):
            found = store.lookup(q)
            rows.append({"query": q, "status": found["status"], "matched by": found["matchedBy"],
                         "candidates": ", ".join(f"{c['id']} ({c['title']})" for c in found["candidates"])})
        display(pd.DataFrame(rows).convert_dtypes())
        pep = store.record("pep-0484")["record"]
        print(pep["title"], "·", pep["attribution"], "· created", pep["dates"]["occurred_at"]["value"])
        print("cite:", pep["citation"])
    """),
    md("""
    ## Supersession chains

    The PEPs' own *Superseded-By* headers, as chains: every one reaches a current PEP.
    """),
    code("""
    if store is not None:
        edges = chain_edges(store)
        display(chain_summary(edges))
        plot_chains(edges)
        plt.show()
    """),
    code("""
    if store is not None:
        for rid in ("pep-0563", "pep-0649"):
            print(rid, "→", store.explain(rid, query="postponed evaluation annotations")["message"])
    """),
    md("""
    ## A timeline by year

    PEPs created per year (their `Created` header, as `occurred_at`), by type; withdrawn PEPs are
    unavailable and not counted.
    """),
    code("""
    if store is not None:
        kinds = ["standards-track", "informational", "process"]
        peps = store.records(type=kinds, lifecycle="all", limit=1000).to_frame()
        per_year = peps.groupby([peps["occurred_at"].dt.year.rename("year"), "type"]).size().unstack(fill_value=0)
        ax = per_year.plot.bar(stacked=True, figsize=(12, 4), width=0.85, title="PEPs created per year, by type")
        ax.set_xlabel("")
        ax.set_ylabel("PEPs")
        plt.show()
    """),
    md("""
    And the PEPs of one recent year on knowtk's own timeline (`store.timeline(...).plot()`), one
    lane per type:
    """),
    code("""
    if store is not None:
        year = store.timeline(since="2025-01-01", until="2025-12-31", limit=200)
        print(year.summary())
        year.plot(lanes="type")
        plt.show()
    """),
]

# -- 06 · query lab: a self-contained block --------------------------------------------------------

QUERY_LAB_SETUP = f"""\
import hashlib
import tempfile
from pathlib import Path

import frontmatter
import matplotlib.pyplot as plt
import pandas as pd

import knowtk
from knowtk.lab import ablate, check, compare, load_gold, run, save_run
from knowtk.lab.plots import plot_rank_changes
from knowtk.notebook import find_path, scratch_copy

{STORE_VARIABLE}
# the gold set: a file; None takes $KNOWTK_GOLD, else data/fixtures/gold/demo.yaml of the checkout
GOLD = None

pd.set_option("display.max_colwidth", 70)


{DIGEST}


DEMO = find_path(STORE)
GOLD_SET = find_path(GOLD, env="KNOWTK_GOLD", default="data/fixtures/gold/demo.yaml")
before = digest(DEMO)
work = scratch_copy(DEMO)  # a copy in a temporary folder: this notebook edits a record, never the store it came from
store = knowtk.open_store(work)
gold = load_gold(GOLD_SET)
names = [v.name for v in gold.all_variants()]
print(f"gold set {{gold.name!r}}: {{len(gold)}} cases, k={{gold.k}}, variants {{names}}")"""

QUERY_LAB: list[Cell] = [
    md("""
    # 06 · Query lab

    A search team keeps a set of questions with known answers, scores the engine on it, compares
    variants, and looks at which change helped or hurt, and why. This notebook does that on a copy
    of the demo store with the gold set `data/fixtures/gold/demo.yaml` (the format, the metrics and
    the command line are in `docs/query-lab.md`).
    """),
    ("code", QUERY_LAB_SETUP),
    md("""
    ## The gold set

    Each case names a tool, its arguments as `store.call` takes them, the record ids a good answer
    holds (graded: 3 is the answer, 1 a useful extra), the ids it must not hold, and for lookups the
    status. Named variants change the arguments of every case (`any-words`, `top3`), switch
    `knowl_query`'s semantic search off (`keyword-only`), or ask each case in other words (`reworded`).
    """),
    code("""
    pd.DataFrame(
        [{"case": c.id, "tool": c.tool, "query": c.query, "expect": dict(c.expect), "must_not": list(c.must_not),
          "status": c.status} for c in gold]
    )
    """),
    md("""
    ## Run it

    `run(gold, store)` asks every case under every variant through the real tools and scores the
    answers: hit@1, hit@k, recall@k, MRR, nDCG@k (graded), the lookup status, and whether a
    must-not id came back (`clean`).
    """),
    code("""
    result = run(gold, store)
    result.metrics()
    """),
    code("""
    result.plot()
    plt.show()
    """),
    md("""
    One row per case. A superseded expectation counts through its current replacement, and the
    `replaced` column says so: *HNSW graph* is asked of an earlier decision, and the active search
    rightly answers with the decision that replaced it.
    """),
    code("""
    cases = result.to_frame()
    cases[cases["variant"] == "default"][["case", "tool", "query", "passed", "hit@1", "ndcg@k", "first_rank",
                                          "replaced", "why_not"]]
    """),
    md("""
    ## Why not?

    Every expected id that is not in the first k carries its reason, from `store.explain`: not
    matched (which words are missing), filtered out (by which filter), excluded (by which rule: a
    withdrawn record, a chain that ends in nothing, ...), or ranked below k.
    """),
    code("""
    misses = result.misses()
    misses[misses["variant"] == "default"][["case", "expected_id", "counted_id", "reason", "message"]]
    """),
    md("""
    ## Two variants side by side

    `result.compare(left, right)` puts each case's metrics under both variants next to each other,
    the cases that changed first. Matching *any* word finds the calibration note the all-words
    search missed, and costs the HNSW case its first place.
    """),
    code("""
    table = result.compare("default", "any-words")
    table[["case", "change", "query_left", "rank_left", "rank_right", "ndcg@k_left", "ndcg@k_right",
           "ndcg@k_delta"]]
    """),
    code("""
    plot_rank_changes(table)
    plt.show()
    """),
    md("""
    The other variants against the default, changed cases only: a page of three, the same cases in
    other words, and `knowl_query` without its embedding model (identical to the default where the
    `semantic` extra is not installed).
    """),
    code("""
    summary = []
    for name in ("top3", "reworded", "keyword-only"):
        t = result.compare("default", name)
        summary.append(t[t["changed"]].assign(variant=name)[["variant", "case", "change", "query_right", "rank_left",
                                                             "rank_right", "ndcg@k_delta"]])
    pd.concat(summary, ignore_index=True)
    """),
    md("""
    ## Which words help?

    Term ablation runs one case with each of its words dropped, and with each word of a list added.
    A word whose removal lowers nDCG@k *helps*; an added word that lowers it *hurts* (the knowl
    advice: every on-subject word helps, every off-subject word costs more than it gives). Here
    *decision* and *sqlite* name the subject and help; *budget* does not, and empties the answer.
    """),
    code("""
    ablate(store, gold["vector-index-decision"], add=["sqlite", "decision", "budget"])[
        ["change", "word", "query", "ndcg@k", "effect", "verdict", "ranks", "total"]]
    """),
    md("""
    ## An edit of a record, scored

    Save the run as a baseline, give the calibration troubleshooting note a sentence about the eye
    tracker, run again, and compare the two runs, changed cases first. The note now matches *eye
    tracker calibration*: recall rises, but it also outranks the decision graded higher, so nDCG@k
    falls a little. `check` reports that drop, which is what `knowtk eval --baseline` gates on in CI
    (`tolerance` lets small drops pass).
    """),
    code("""
    baseline = save_run(result, Path(tempfile.mkdtemp(prefix="knowtk-lab-")) / "baseline.json")

    note = work / "lab" / "notes" / "lab-calibration-troubleshooting.md"
    post = frontmatter.load(note)
    post.content += "\\n\\nEye tracker calibration fails most often after the room lights change.\\n"
    frontmatter.dump(post, note)

    after = run(gold, store)
    edit = compare(result, after, left="default")
    edit[edit["changed"]][["case", "change", "rank_left", "rank_right", "recall@k_left", "recall@k_right",
                           "ndcg@k_delta", "top_right"]]
    """),
    code("""
    regression = check(after, knowtk.lab.load_run(baseline))
    print("ok:", regression.ok, "·", "; ".join(regression.notes))
    regression.to_frame().query("delta != 0")
    """),
    md("""
    The same from the command line, as a CI step would run it (exit 0: nothing dropped; 1: a metric
    dropped or a case could not be scored; 2: a malformed gold set or bad arguments):

    ```bash
    knowtk eval data/fixtures/gold/demo.yaml --store data/fixtures/demo --save baseline.json
    knowtk eval data/fixtures/gold/demo.yaml --store data/fixtures/demo --baseline baseline.json
    ```
    """),
    code("""
    from knowtk.lab.cli import eval_main

    state = tempfile.mkdtemp(prefix="knowtk-lab-")
    code = eval_main([str(GOLD_SET), "--store", str(work),
                      "--state-dir", state, "--variant", "default", "--baseline", str(baseline)])
    print("exit code:", code)
    """),
    md("""
    ## The lab widget

    `QueryLabWidget(store, gold)` loads a gold set, runs it under the chosen variants, shows the
    metrics and the cases of two variants (changed first), one row per case. Click a case's row and
    its hits and the why-not of each expected id open directly under it (`lab.case.value = ...` does
    the same from code). A malformed gold set or a store error is refused in place of the answer.
    Where widgets do not run, the output is a static copy of its state.
    """),
    code("""
    from knowtk.lab.widget import QueryLabWidget

    lab = QueryLabWidget(store, GOLD_SET)
    lab.variants.value = ("default", "any-words")
    lab.run()
    lab.case.value = "gpu-budget"  # as a click on its row
    lab
    """),
    md("""
    ## A gold set built from the PEPs' own headers

    When the PEPs store is found (`KNOWTK_PEPS`, or `shared/corpora/peps` beside the checkout), a gold set is built at
    run time from the PEPs' headers: the `PEP N` alias must look its PEP up, a PEP's title must find
    it with `knowledge_grep` and with `knowl_query`, and the title of a superseded PEP must find its
    replacement. It is never written into the repository, and only the aggregate metrics are shown.
    """),
    code("""
    import yaml

    from knowtk.lab import parse_gold
    from knowtk.notebook import find_path

    PEPS = find_path(None, env="KNOWTK_PEPS", default="shared/corpora/peps", required=False)  # as notebook 05
    if PEPS is not None:
        peps = knowtk.open_store(PEPS, state_dir=tempfile.mkdtemp(prefix="knowtk-peps-"), read_only=True)
        snap = peps.snapshot()
        pages = [r for rid, r in sorted(snap.records.items()) if rid.startswith("pep-") and snap.available(rid)]
        cases = []
        for r in (r for r in pages[::20] if snap.lifecycle[r.id] == "active"):
            cases += [
                {"id": f"lookup-{r.id}", "tool": "knowledge_lookup", "args": {"query": r.aliases[0]},
                 "status": "found", "expect": [r.id]},
                {"id": f"title-{r.id}", "tool": "knowledge_grep", "args": {"query": r.title}, "expect": [r.id]},
                {"id": f"knowl-{r.id}", "tool": "knowl_query", "args": {"query": r.title, "limit": 5},
                 "expect": [r.id]},
            ]
        for r in (r for r in pages if snap.lifecycle[r.id] == "superseded"):
            cases.append({"id": f"superseded-{r.id}", "tool": "knowledge_grep", "args": {"query": r.title},
                          "expect": [r.id]})
        spec = {"name": "peps-headers", "k": 5, "variants": {"any-words": {"args": {"mode": "any"}}}, "cases": cases}
        pep_gold = parse_gold(yaml.safe_dump(spec, sort_keys=False), path="<built from the PEP headers>")
        pep_run = run(pep_gold, peps)
        replaced = sum(e["replaced"] for c in pep_run.cases for e in c["expected"]) // len(pep_run.variant_names)
        print(f"{len(pep_gold)} cases built from the headers; {replaced} superseded expectations counted "
              "through their current replacement")
        display(pep_run.metrics().drop(columns=["note"]))
        display(pep_run.misses().groupby(["variant", "kind"]).size().rename("misses").to_frame())
        pep_run.plot()
        plt.show()
    else:
        print("No PEPs store (KNOWTK_PEPS, or shared/corpora/peps beside the checkout): this section is skipped.")
    """),
    md("""
    ## The store it was copied from is untouched
    """),
    code("""
    print("the store it was copied from is unchanged:", digest(DEMO) == before)
    """),
]

REVIEW_SETUP = f"""\
import hashlib

import knowtk
from knowtk.notebook import ChainWidget, find_path, scratch_copy

{STORE_VARIABLE}


{DIGEST}


DEMO = find_path(STORE)
before = digest(DEMO)
work = scratch_copy(DEMO)  # a copy in a temporary folder: this notebook changes it, never the store it came from
store = knowtk.open_store(work)
print("working copy:", work)
print(store.records(limit=1)["total"], "active records")"""

REVIEW: list[Cell] = [
    md("""
    # 07 · Review and fix

    A reviewer finds a broken supersession chain in the demo store and fixes it from the notebook, on a
    scratch copy: every change is checked against the file that was read (its sha256), judged by the
    same rules as a scanned file, written atomically, and leaves a *receipt*. Any receipt can be undone
    (`store.undo`): the files go back to their bytes, with a receipt of its own. See `docs/mutations.md`.
    """),
    ("code", REVIEW_SETUP),
    md("""
    ## The broken chain

    `dec-2025-030` says it is superseded by `dec-2026-099`, a record that was planned but never written:
    the chain ends at nothing, and the decision disappears from default searches.
    """),
    code("""
    issues = [i for i in store.grep("GPU budget")["coverage"]["issues"] if i["id"] == "dec-2025-030"]
    print(issues[0]["code"], "·", issues[0]["message"])
    print("a search for the GPU budget finds:", [h["id"] for h in store.grep("GPU budget")["hits"]])
    path = work / store.snapshot().records["dec-2025-030"].path
    original = path.read_bytes()  # to compare after the undo
    ChainWidget(store, "dec-2025-030", read_only=True)  # the picture only: the fix comes below
    """),
    md("""
    ## Fix it: reinstate the decision

    The follow-up was never decided, so the budget decision still stands. `reinstate` needs the sha256
    the reviewer read and a reason; it makes the file active again (only the `status` and `superseded_by`
    lines change) and lifts the supersession safeguard, journalled with the receipt. A preview shows the
    change first and writes nothing.
    """),
    code("""
    sha = store.snapshot().records["dec-2025-030"].sha256  # a superseded record: read its file's hash
    print(store.preview("reinstate", "dec-2025-030", reason="the follow-up was never decided",
                        expected_sha256=sha)["records"][0]["diff"])
    fixed = store.reinstate("dec-2025-030", reason="the follow-up was never decided", expected_sha256=sha)
    fixed.to_frame()[["receipt", "operation", "id", "path", "sha256_before", "sha256_after", "indexed"]]
    """),
    md("""
    ## The re-run query

    The next search reconciles the index with the change: the decision is found again, and the receipt
    now reads `indexed: true`.
    """),
    code("""
    print("a search for the GPU budget finds:", [h["id"] for h in store.grep("GPU budget")["hits"]])
    print("indexed:", store.history("dec-2025-030")["receipts"][0]["indexed"])
    """),
    md("""
    ## A stale hash is refused

    Had the file changed since the reviewer read it, the write would be refused, naming both hashes.
    """),
    code("""
    try:
        store.update("dec-2025-030", {"summary": "Raise the GPU budget"}, expected_sha256=sha)  # the old hash
    except knowtk.PublicationConflict as exc:
        print(type(exc).__name__, "·", exc.path, "· expected", exc.expected[:12], "· found", exc.actual[:12])
    """),
    md("""
    ## Undo

    `store.undo(receipt)` applies the inverse change on the hash the fix left: the file gets its bytes
    back, the supersession guard is recorded again, and the undo leaves a receipt of its own (which can be
    undone in turn). A file changed since the receipt is refused, as every write is.
    """),
    code("""
    undone = store.undo(fixed)
    print("receipt:", undone["receipt"]["id"], "·", undone["receipt"]["operation"], "·", undone["receipt"]["reason"])
    print("the file's bytes are back:", path.read_bytes() == original)
    print("a search for the GPU budget finds:", [h["id"] for h in store.grep("GPU budget")["hits"]])
    """),
    md("""
    ## Undo a mistaken withdrawal

    A withdrawal is a safeguard: putting the file back to `active` by hand does not bring the record back.
    `reinstate` does, with a reason and a receipt, and removes the `status` line the withdrawal added: the
    file is as it was.
    """),
    code("""
    rec = store.record("dec-2026-021")["record"]
    kept = (work / rec["path"]).read_bytes()
    gone = store.withdraw("dec-2026-021", reason="entered twice (it was not)", expected_sha256=rec["sha256"])
    print("after withdraw:", store.lookup("dec-2026-021")["status"])
    back = store.reinstate("dec-2026-021", reason="withdrawn by mistake",
                           expected_sha256=gone["receipt"]["records"][0]["sha256After"])
    print("after reinstate:", store.lookup("dec-2026-021")["status"], "· same bytes:",
          (work / rec["path"]).read_bytes() == kept)
    """),
    md("""
    ## The history and a diff

    `store.history()` lists every receipt, newest first; `store.diff(id)` shows what changed in a record
    since the first version a receipt saw (here nothing: the fix was undone).
    """),
    code("""
    store.history().to_frame()[["at", "operation", "id", "actor", "reason", "indexed"]]
    """),
    code("""
    print(store.diff("dec-2025-030") or "(no difference: the file is as it was)")
    """),
    md("""
    ## The same from a widget

    The chain widget offers Edit fields, Supersede by…, Withdraw and Reinstate under the selected record.
    Pick **Reinstate**, give a reason, **Preview** (the diff; nothing written), **Confirm**: the receipt stays
    under it (the operation, each file's diff, whether it is indexed) with an **Undo** that puts the file
    back, leaving its own receipt. The chain is drawn again after each.
    """),
    code("""
    review = ChainWidget(store, "dec-2025-030")
    review
    """),
    md("""
    ## The store it was copied from is untouched
    """),
    code("""
    print("the store it was copied from is unchanged:", digest(DEMO) == before)
    """),
]


ADR_FOLDER: list[Cell] = [
    md("""
    # 08 · An ADR folder, read as it is

    Engineering repositories keep their decisions as Architecture Decision Records: numbered Markdown
    files with a status line such as `Superseded by [ADR-0004](0004-deploy-with-container-images.md)`.
    knowtk reads such a folder without converting it, through the `adr` profile (docs/profiles.md).
    This notebook opens the MADR example folder bundled with the tests
    (`data/fixtures/profiles/madr/`: MADR 2 and MADR 3/4 files side by side, a nested `archive/`, an
    index and a template), draws its supersession chains and timeline, and searches it.
    """),
    code(f"""
    import hashlib
    import tempfile

    import pandas as pd

    import knowtk
    from knowtk.notebook import find_path

    # the ADR folder: a path; None takes $KNOWTK_STORE, else data/fixtures/profiles/madr of the checkout
    STORE = None

    pd.set_option("display.max_colwidth", 70)
    ADRS = find_path(STORE, default="data/fixtures/profiles/madr")


    {DIGEST.replace(chr(10), chr(10) + "    ")}


    before = digest(ADRS)
    """),
    md("""
    ## Without a profile: a hint, never a silent switch

    Opened as a knowtk store, the folder has no records (its files have no knowtk frontmatter), and the
    answer says, in one line, which profile would read it:
    """),
    code("""
    plain_try = knowtk.open_store(ADRS, state_dir=tempfile.mkdtemp(prefix="knowtk-"), read_only=True)
    print(plain_try.grep("deploy")["coverage"]["hint"])
    """),
    md("""
    ## With `profile="adr"`

    Every ADR is a record: its id from its folder and number, its title from the heading, its date
    from `date:` or `Date:`, its status word kept in `fields.adr_status` (and the tag `adr/WORD`),
    and `superseded` with the replacing record's id when the status names one.
    """),
    code("""
    store = knowtk.open_store(ADRS, profile="adr", state_dir=tempfile.mkdtemp(prefix="knowtk-"), read_only=True)
    snap = store.snapshot()
    pd.DataFrame(
        [
            {
                "id": r.id,
                "title": r.title,
                "date": r.dates["occurred_at"].text if "occurred_at" in r.dates else None,
                "adr_status": r.fields.get("adr_status"),
                "status": r.status,
                "superseded_by": r.superseded_by,
            }
            for r in sorted(snap.records.values(), key=lambda r: r.id)
            if r.type == "decision"
        ]
    )
    """),
    md("""
    ## What knowtk inferred, apart from what was written

    A full record lists the keys its profile derived, and keeps the frontmatter as the person wrote it:
    """),
    code("""
    rec = store.record("docs:decisions:0004")["record"]
    {k: rec[k] for k in ("profile", "derived", "derivedLines", "frontmatter", "status", "supersededBy")}
    """),
    md("""
    ## The supersession chains

    Deploying went from Ansible (ADR 1, MADR 2) to container images (ADR 4, MADR 3) to Kubernetes
    (ADR 6); a session decision in `archive/` was replaced by one in the parent folder.
    """),
    code("""
    from knowtk.notebook import plot_chains
    from knowtk.query.chains import chain_edges, chain_summary

    edges = chain_edges(store)
    chain_summary(edges)
    """),
    code("""
    plot_chains(edges, title="Supersession chains of the ADR folder");
    """),
    md("""
    ## The decisions on a timeline
    """),
    code("""
    store.timeline(eligibility="include_inactive", limit=50).plot();
    """),
    md("""
    ## What was in force then: `validAt`

    Which decisions held on 1 December 2023? A record is in force from its start (`occurred_at`, here the
    ADR's date, else `recorded_at`) until its `expires_at`, else until the record that superseded it
    starts (docs/time.md). Asked then, ADR 4 is active, although it is superseded today, and ADR 6 is
    not there yet:
    """),
    code("""
    store.records(type="decision", valid_at="2023-12-01").to_frame()[["id", "title", "lifecycle"]]
    """),
    md("""
    A search then finds what was in force then: worded like ADR 1, it reaches ADR 4, the record in force
    on that day, where today it reaches ADR 6.
    """),
    code("""
    store.grep("Ansible playbooks", valid_at="2023-12-01").to_frame()[["rank", "id", "title", "lifecycle", "via_id"]]
    """),
    md("""
    ## The decisions in force, drawn

    `store.in_force(...)` gives each record's span of validity; `plot_in_force` draws a bar per record
    from its start to its end (superseded spans shaded), the chain's links, and the instant asked about
    with the records in force then outlined.
    """),
    code("""
    from knowtk.notebook import plot_in_force

    in_force = store.in_force(type="decision", valid_at="2023-12-01")
    in_force[["id", "start", "end", "ended_by", "superseded_by", "in_force"]]
    """),
    code("""
    plot_in_force(in_force, valid_at="2023-12-01", title="Decisions in force on 1 December 2023");
    """),
    md("""
    A timeline asked with `valid_at` carries each row's span, which `plot(validity=True)` shades behind
    it; the lookup widget has a *valid at* field (so have the grep and chain widgets).
    """),
    code("""
    store.timeline(valid_at="2023-12-01", eligibility="include_inactive", limit=50).plot(validity=True);
    """),
    code("""
    from knowtk.notebook import LookupWidget

    then = LookupWidget(store, "ADR-4", valid_at="2023-12-01")
    then.status, then.result["record"]["lifecycle"]
    """),
    md("""
    ## Superseded wording finds the current decision

    A search worded like an old decision answers with the current one, naming the old record it was
    reached through; `lookup` finds an ADR by its number.
    """),
    code("""
    store.grep("Ansible playbooks").to_frame()[["rank", "id", "title", "via_id", "via_title"]]
    """),
    code("""
    found = store.lookup("ADR-4", lifecycle="all")
    found["status"], found["record"]["id"], found["record"]["title"]
    """),
    md("""
    ## The folder is untouched
    """),
    code("""
    print("the ADR folder is unchanged:", digest(ADRS) == before)
    """),
]

IN_TIME: list[Cell] = [
    md("""
    # 09 · The store in time

    "What did the store say on 1 March?" is known time: the store as its files stood at an instant.
    When the store lies in a Git work tree, `store.at(when)` reads its folder in the commit in force then,
    straight from Git's objects (nothing is checked out; the work tree, the index and HEAD stay as they
    are), and answers every read tool, method, frame and plot from it (docs/time.md). This notebook builds a
    small ADR repository with commits at set dates, then asks it at several instants.
    """),
    code("""
    import os
    import subprocess
    import tempfile
    from pathlib import Path

    import matplotlib.pyplot as plt
    import pandas as pd
    import yaml

    import knowtk
    from knowtk.notebook import plot_chains, plot_lifecycle_over_time
    from knowtk.query.chains import chain_edges

    pd.set_option("display.max_colwidth", 60)
    top = Path(tempfile.mkdtemp(prefix="knowtk-time-")) / "service"
    adr = top / "docs" / "adr"
    adr.mkdir(parents=True)


    def git(*args, date=None):
        env = {**os.environ, "GIT_AUTHOR_DATE": date or "", "GIT_COMMITTER_DATE": date or ""}
        who = ["-c", "user.name=Ada", "-c", "user.email=ada@example.org"]
        done = subprocess.run(["git", "-C", str(top), *who, *args], capture_output=True, text=True, env=env, check=True)
        return done.stdout.strip()


    def decide(number, title, body="", **fields):
        meta = {"id": f"adr-{number}", "kind": "claim", "type": "decision", "title": title, **fields}
        text = "---\\n" + yaml.safe_dump(meta, sort_keys=False) + "---\\n" + body + "\\n"
        (adr / f"{number:04d}.md").write_text(text, encoding="utf-8")


    def commit(message, date):
        git("add", "-A")
        git("commit", "-qm", message, date=date)


    git("init", "-q", "-b", "main")
    (top / ".gitignore").write_text(".knowtk/\\n")
    decide(1, "Store orders in SQLite", "One file, no server.")
    decide(2, "Expose a REST API", "JSON over HTTP for every client.")
    decide(3, "Log to local files", "Rotated daily.")
    commit("Release 1.0", "2025-01-15T10:00:00Z")
    decide(1, "Store orders in SQLite", "One file, no server.", status="superseded", superseded_by="adr-4")
    decide(4, "Store orders in Postgres", "Several writers now.", supersedes=["adr-1"])
    commit("Move to Postgres", "2025-03-10T14:00:00Z")
    decide(3, "Log to local files", "Rotated daily.", status="superseded", superseded_by="adr-5")
    decide(5, "Ship logs to Loki", "One place to search.", supersedes=["adr-3"])
    decide(2, "Expose a REST API to partners", "JSON over HTTP for partners only.")
    commit("Release 2.0", "2025-05-20T09:00:00Z")
    decide(2, "Expose a REST API to partners", "", status="withdrawn", withdrawn_reason="gRPC everywhere")
    decide(6, "Use gRPC between services", "Typed contracts.")
    commit("Drop REST", "2025-08-01T16:00:00Z")
    decide(4, "Store orders in Postgres", "Several writers now.", status="superseded", superseded_by="adr-7",
           supersedes=["adr-1"])
    decide(7, "Postgres 16 with logical replication", "Read replicas per region.", supersedes=["adr-4"])
    commit("Release 3.0", "2025-10-05T11:00:00Z")
    print(git("log", "--format=%cs  %s"))
    """),
    md("""
    ## The store now, and as it stood

    `store.at(when)` takes a date (the end of that UTC day) or a timestamp with an offset. Every answer
    from the past carries `knownAt`: the instant and the commit it stands on.
    """),
    code("""
    head_before, status_before = git("rev-parse", "HEAD"), git("status", "--porcelain")
    store = knowtk.open_store(adr)
    march = store.at("2025-03-31")
    print(march)
    print(march.stats()["knownAt"])
    march.records(lifecycle="all").to_frame()[["id", "title", "lifecycle"]]
    """),
    md("""
    ## One chain at three instants

    The storage decision was SQLite, then Postgres, then Postgres 16: the chain view of the store at
    each release.
    """),
    code("""
    fig, axes = plt.subplots(3, 1, figsize=(9.5, 7.5), layout="constrained")  # one instant under the other
    for ax, when in zip(axes, ["2025-03-31", "2025-06-01", "2025-12-01"], strict=True):
        plot_chains(chain_edges(store.at(when)), ax=ax, title=f"as the files stood on {when}")
    """),
    md("""
    ## Lifecycle counts over time

    `store.lifecycle_over_time("M")`: active, superseded and withdrawn records at each month's end, as the
    files stood then (each distinct commit is read once).
    """),
    code("""
    counts = store.lifecycle_over_time("M", until="2025-12-31")
    counts[["at", "active", "superseded", "withdrawn", "total"]].tail(4)
    """),
    code("""
    plot_lifecycle_over_time(counts);
    """),
    md("""
    ## What changed between two releases

    `store.changes(since, until=...)` (`knowledge_changes`): one row per record added, removed or changed,
    the frontmatter fields that changed, the lifecycle before and after, and the commits that made it.
    """),
    code("""
    store.changes("2025-01-15", until="2025-05-20").to_frame()
    """),
    code("""
    print(store.diff("adr-2", "2025-01-15", "2025-08-01"))
    """),
    md("""
    ## Git untouched

    Nothing was checked out: HEAD, the index and the work tree are as they were.
    """),
    code("""
    print("HEAD unchanged:", git("rev-parse", "HEAD") == head_before)
    print("work tree and index unchanged:", git("status", "--porcelain") == status_before)
    """),
]

BOOKS: dict[str, list[Cell]] = {
    "01_quickstart.ipynb": QUICKSTART,
    "02_supersession_review.ipynb": SUPERSESSION,
    "04_prototyping_query_behaviour.ipynb": PROTOTYPING,
    "05_real_corpus_peps.ipynb": PEPS,
    "06_query_lab.ipynb": QUERY_LAB,
    "07_review_and_fix.ipynb": REVIEW,
    "08_adr_folder.ipynb": ADR_FOLDER,
    "09_the_store_in_time.ipynb": IN_TIME,
}


# The PEPs corpus may be read, never copied into this repository: notebook 05 is stored without its
# outputs (titles, authors, snippets of the PEPs). The tests execute it afresh against ../shared.
WITHOUT_OUTPUTS = {"05_real_corpus_peps.ipynb"}


def build(cells: list[Cell]) -> nbformat.NotebookNode:
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nb.metadata["language_info"] = {"name": "python"}
    nb.cells = [
        nbformat.v4.new_markdown_cell(src) if kind == "md" else nbformat.v4.new_code_cell(src) for kind, src in cells
    ]
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i:02d}"  # stable ids: regenerating does not churn the diff
    return nb


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--no-execute", action="store_true", help="write the cells without running them")
    parser.add_argument("names", nargs="*", help="notebooks to write (default: all of them)")
    args = parser.parse_args(argv)
    for name in args.names or list(BOOKS):
        nb = build(BOOKS[name])
        if not args.no_execute and name not in WITHOUT_OUTPUTS:
            NotebookClient(
                nb,
                timeout=TIMEOUT,
                kernel_name="python3",
                resources={"metadata": {"path": str(NOTEBOOKS)}},
                # each widget output carries its own text/html copy, which is what GitHub, nbviewer and an
                # unrun JupyterLab show; the live models' state (hundreds of buttons and layouts) is not kept
                store_widget_state=False,
            ).execute()
        nbformat.write(nb, NOTEBOOKS / name)
        print("wrote", (NOTEBOOKS / name).relative_to(REPO))
    return 0


if __name__ == "__main__":
    sys.exit(main())
