"""The plain YAML reader answers exactly as PyYAML's loader does, or leaves the text to it: never a different answer.

``plain_yaml`` (knowtk.model.plainyaml) reads knowtk.yaml and typical frontmatter without importing PyYAML
(a process that reads only plain YAML never imports it). Every text here is read both ways: the plain
reader's answer, when it gives one, must equal what ``parse_yaml``'s PyYAML loader (timestamps as text)
returns, type for type (True is not 1, 1 is not 1.0); where that loader fails, the plain reader must give
none. Where PyYAML's own ``safe_load`` reads no date, its answer is the same too.
"""

from __future__ import annotations

import datetime
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from knowtk.model import plainyaml
from knowtk.model.plainyaml import plain_yaml
from knowtk.model.records import _pyyaml, _split, parse_yaml
from tests.helpers import REPO

SETTINGS = settings(
    max_examples=600, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck)
)


def typed(value: Any) -> Any:
    """``value`` with the type of every scalar in it: True, 1 and 1.0 differ."""
    if isinstance(value, dict):
        return ("dict", [(typed(k), typed(v)) for k, v in value.items()])
    if isinstance(value, list):
        return ("list", [typed(v) for v in value])
    return (type(value).__name__, value)


def reference(text: str) -> tuple[bool, Any]:
    """(read, value) as parse_yaml's PyYAML loader reads ``text``."""
    module, loader, errors = _pyyaml()
    try:
        return True, module.load(text, Loader=loader)
    except errors:
        return False, None


def has_date(value: Any) -> bool:
    if isinstance(value, dict):
        return any(has_date(k) or has_date(v) for k, v in value.items())
    if isinstance(value, list):
        return any(has_date(v) for v in value)
    return isinstance(value, datetime.date)


def agrees(text: str) -> bool:
    """Asserts the plain reader agrees with PyYAML on ``text``; whether it read it (False: left to PyYAML)."""
    mine = plain_yaml(text)
    if mine is None:
        return False
    read, theirs = reference(text)
    assert read, f"PyYAML refuses {text!r}, the plain reader read {mine!r}"
    assert typed(mine) == typed(theirs), text
    try:
        safe = yaml.safe_load(text)
    except ValueError:  # a date that is no real date (2026-02-30): safe_load builds dates, our loader keeps text
        return True
    if not has_date(safe):
        assert typed(mine) == typed(safe), text
    return True


def test_the_resolvers_are_pyyamls_less_the_timestamp() -> None:
    float_rx, int_rx, _, _ = plainyaml.numbers()
    ours = {
        "tag:yaml.org,2002:bool": plainyaml._BOOL.__contains__,
        "tag:yaml.org,2002:float": lambda w: bool(w) and w[0] in plainyaml._NUMBER_START and bool(float_rx.match(w)),
        "tag:yaml.org,2002:int": lambda w: bool(w) and w[0] in plainyaml._NUMBER_START and bool(int_rx.match(w)),
        "tag:yaml.org,2002:null": plainyaml._NULL.__contains__,
        "tag:yaml.org,2002:merge": lambda w: w == "<<",
        "tag:yaml.org,2002:value": lambda w: w == "=",
    }
    theirs = {tag: rx for rs in yaml.SafeLoader.yaml_implicit_resolvers.values() for tag, rx in rs}
    words = [*SCALARS, *KEYS, *(w for w in (a + b for a in RESOLVED for b in RESOLVED))]
    for tag, match in ours.items():
        assert [match(w) for w in words] == [bool(theirs[tag].match(w)) for w in words], tag
    assert set(theirs) - set(ours) == {
        "tag:yaml.org,2002:timestamp",
        "tag:yaml.org,2002:yaml",  # a lone ! & or *: never a plain scalar here
    }


# -- hand-written cases: each read, or left to PyYAML -------------------------------------------------------

READ = [
    "name: python-peps\nshare: true\nontology:\n  standards-track:\n    aliases:\n    - standards\n    - spec\n",
    "name: lean\n",
    "a: 1\nb: -2\nc: +3\nd: 0\ne: 1.5\nf: -0.25\ng: ~\nh: null\ni: NULL\nj:\nk: yes\nl: Off\nm: TRUE\n",
    "a: 2026-03-04\nb: 2026-03-05T09:12:00Z\nc: 2026-03-05 09:12:00+02:00\nd: 2026-3-4\n",
    "a: 'it''s'\nb: \"quoted # not a comment\"\nc: ''\nd: \"\"\ne: 'yes'\nf: \"1\"\n",
    "a: b # comment\nc: d#not\n# whole line\n  # indented comment\n\ne: [x, y z, 1, true, null]\nf: []\ng: {}\n",
    "list:\n  - a\n  - b\nsame:\n- c\n- -1\nafter: x\nnested:\n  deeper:\n    deepest: v\n  back: w\n",
    "title: A title, with commas [and] {braces}\nurl: https://example.org/x?y=z#frag\n",
    "title: Ünïcödé — and emoji 🙂\nwords: non breaking\u00a0space\n",
    "dup: 1\nother: 2\ndup: 3\n",
    "a: b   \nc:    d\n",
]
LEFT = [
    "",
    "# only a comment\n",
    "- a\n- b\n",
    "a: |\n  block\n",
    "a: >\n  folded\n",
    "a: &x 1\nb: *x\n",
    "a: !!str 1\n",
    "a: multi\n  line\n",
    "a: 'multi\n  line'\n",
    'a: "esc\\n"\n',
    "a:\tb\n",
    "a: b\r\nc: d\r\n",
    "on: x\n",
    "null: x\n",
    "'quoted key': x\n",
    "key with space: x\n",
    "a: 0x1F\nb: 010\nc: 1_000\nd: 1e5\ne: .inf\nf: 1:30\n",
    "a: <<\n",
    "---\na: 1\n",
    "a: 1\n...\n",
    "  a: 1\n",
    "a:\n  - x: 1\n",
    "a:\n  -\n",
    "a: [x, [y]]\n",
    "a: [x,]\n",
    "a: {b: 1}\n",
    "a: b: c\n",
    "a: b:\n",
    "a:b\n",
    "a : b\n",
    "a: 'x'y\n",
    "a: - x\n",
    "a:\n  b: 1\n c: 2\n",
    "a: b\n  c: d\n",
    "\ufeffa: 1\n",
    "a: x\u2028y\n",
]


@pytest.mark.parametrize("text", READ)
def test_plain_texts_are_read_as_pyyaml_reads_them(text: str) -> None:
    assert agrees(text)


@pytest.mark.parametrize("text", LEFT)
def test_other_texts_are_left_to_pyyaml(text: str) -> None:
    assert plain_yaml(text) is None


def test_the_repositorys_own_frontmatter_and_config_are_read_alike() -> None:
    """Real-world-shaped texts: every knowtk.yaml and record file of data/fixtures."""
    read = seen = 0
    for path in sorted((REPO / "data" / "fixtures").rglob("*")):
        if path.suffix == ".md":
            split = _split(path.read_bytes())
            if not isinstance(split, tuple):
                continue
            text = split[0]
        elif path.name == "knowtk.yaml":
            text = path.read_text(encoding="utf-8")
        else:
            continue
        seen += 1
        read += agrees(text)
    assert seen > 100 and read > seen // 2  # most of them take the plain path


def test_parse_yaml_answers_the_same_either_way(monkeypatch: pytest.MonkeyPatch) -> None:
    texts = [*READ, *LEFT, "a: [unclosed\n", "a: 1\n  b: 2\n"]
    fast = [parse_yaml(t) for t in texts]
    monkeypatch.setattr("knowtk.model.records.plain_yaml", lambda text: None)
    assert fast == [parse_yaml(t) for t in texts]


# -- generated texts -------------------------------------------------------------------------------------------

SCALARS = [
    "x",
    "hello world",
    "a-b",
    "a_b",
    "a.b",
    "A",
    "0",
    "1",
    "-1",
    "+1",
    "007",
    "0o7",
    "0x1f",
    "0b101",
    "1_000",
    "1.5",
    "-1.5",
    "1.",
    ".5",
    "1e3",
    "1.0e+3",
    "6.02e+23",
    ".inf",
    "-.inf",
    ".nan",
    "1:30",
    "1:30.5",
    "190:20:30",
    "2026-03-04",
    "2026-03-04T09:12:00Z",
    "2026-03-04 09:12:00.5 +02:00",
    "2026-3-4",
    "20260304",
    "yes",
    "Yes",
    "YES",
    "no",
    "No",
    "on",
    "On",
    "off",
    "OFF",
    "true",
    "True",
    "tRue",
    "false",
    "y",
    "n",
    "Y",
    "~",
    "null",
    "Null",
    "NULL",
    "nUll",
    "<<",
    "=",
    "-",
    "--",
    "-x",
    "?x",
    ":x",
    "x:",
    "x:y",
    "x: y",
    "x :y",
    "a #b",
    "a#b",
    "#a",
    "'q'",
    "'it''s'",
    "''",
    '"d"',
    '""',
    '"a\\"b"',
    "'unclosed",
    '"unclosed',
    "[a, b]",
    "[]",
    "[ ]",
    "{}",
    "{ }",
    "[a,]",
    "[a, [b]]",
    "{a: 1}",
    "&a x",
    "*a",
    "!!str x",
    "!x",
    "|",
    ">",
    "%x",
    "@x",
    "`x",
    ",x",
    "x,y",
    "x]",
    "x}",
    "é",
    "a\u00a0b",
    "🙂",
    "a  b",
    "a\tb",
    "  lead",
    "trail  ",
]
# the characters of YAML 1.1's numbers, booleans and nulls: their pairs are matched both ways
RESOLVED = [*"0123456789+-._:eExXbBoO~<=", "inf", "Inf", "nan", "NaN", "yes", "No", "ON", "off", "true", "null", ""]
KEYS = [
    "a",
    "b",
    "id",
    "kind",
    "title",
    "tags",
    "x.y",
    "a-b",
    "_k",
    "on",
    "yes",
    "null",
    "True",
    "1",
    "k1",
    "'q'",
    "k k",
    "<<",
    "a:b",
]


def _scalar() -> st.SearchStrategy[str]:
    words = st.text(alphabet="ab01 :#-'\".,[]{}_é", min_size=1, max_size=8)
    plain = st.sampled_from(["x", "hello world", "1", "-2", "1.5", "yes", "null", "2026-03-04", "'q'", '"d"', "a#b"])
    return st.one_of(plain, st.sampled_from(SCALARS), words)


@st.composite
def _document(draw: st.DrawFn, indent: int = 0, depth: int = 0) -> list[str]:
    step = draw(st.sampled_from([1, 2, 2, 4]))
    lines: list[str] = []
    for _ in range(draw(st.integers(1, 4))):
        key = draw(st.sampled_from(KEYS))
        pad = " " * indent
        shape = draw(st.sampled_from(["scalar", "scalar", "map", "seq", "seq-same", "empty", "flow"]))
        comment = draw(st.sampled_from(["", "", " # c", "  #c", "#c"]))
        if shape == "scalar":
            lines.append(f"{pad}{key}: {draw(_scalar())}{comment}")
        elif shape == "map" and depth < 3:
            lines.append(f"{pad}{key}:{comment}")
            lines += draw(_document(indent + step, depth + 1))
        elif shape in ("seq", "seq-same"):
            lines.append(f"{pad}{key}:{comment}")
            at = " " * (indent if shape == "seq-same" else indent + step)
            lines += [f"{at}- {draw(_scalar())}" for _ in range(draw(st.integers(1, 3)))]
        elif shape == "flow":
            items = draw(st.lists(_scalar(), max_size=3))
            lines.append(f"{pad}{key}: [{', '.join(items)}]{comment}")
        else:
            lines.append(f"{pad}{key}:{comment}")
        if draw(st.integers(0, 5)) == 0:
            lines.append(draw(st.sampled_from(["", "# note", " " * indent + "# note", "   "])))
    return lines


@st.composite
def _text(draw: st.DrawFn) -> str:
    lines = draw(_document())
    for _ in range(draw(st.sampled_from([0, 0, 1, 2]))):  # a mutation: a character put in, taken out, an indent changed
        i = draw(st.integers(0, len(lines) - 1))
        line = lines[i]
        j = draw(st.integers(0, len(line)))
        op = draw(st.sampled_from(["insert", "delete", "indent", "dedent"]))
        if op == "insert":
            line = line[:j] + draw(st.sampled_from(list(" :#-'\"[]{}\t!&*|>~\r\u00a0\u2028\ufeff\x85"))) + line[j:]
        elif op == "delete":
            line = line[:j] + line[j + 1 :]
        elif op == "indent":
            line = " " + line
        else:
            line = line[1:] if line.startswith(" ") else line
        lines[i] = line
    return "\n".join(lines) + draw(st.sampled_from(["\n", "", "\n\n"]))


@SETTINGS
@given(_text())
def test_generated_texts_are_read_alike_or_left_to_pyyaml(text: str) -> None:
    agrees(text)


def test_the_generated_texts_mostly_take_the_plain_path() -> None:
    """The generator is not all refusals: a fair share of its texts is read by the plain reader."""
    counts = {"read": 0, "all": 0}

    @settings(max_examples=300, derandomize=True, database=None, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_text())
    def count(text: str) -> None:
        counts["all"] += 1
        counts["read"] += agrees(text)

    count()
    assert counts["read"] >= counts["all"] // 8, counts  # most generated texts are outside, on purpose


def test_a_plain_reader_answer_holds_json_types_only() -> None:
    """The reader builds dicts, lists, str, int, float, bool and None only: what the scan cache stores as JSON."""
    value = plain_yaml("a: [1, x]\nb:\n  c: 1.5\n  d: ~\n  e: on\n")
    assert typed(value) == typed({"a": [1, "x"], "b": {"c": 1.5, "d": None, "e": True}})


def test_every_scalar_of_the_pool_in_every_place() -> None:
    """Each tricky scalar as a value, an item of either sequence, a flow item and a key: read alike or left."""
    pool = [*SCALARS, *KEYS, *(a + b for a in RESOLVED for b in RESOLVED)]
    places = ["a: {}\n", "a:\n- {}\n", "a:\n  - {}\nb: 1\n", "a: [{}]\n", "a: [x, {}]\n", "{}: x\n", "a:\n  {}: x\n"]
    read = sum(agrees(place.format(s)) for s in pool for place in places)
    assert read > len(pool)  # the pool is mostly plain words and numbers: many are read
