"""Gold sets: cases with known answers, read from YAML or CSV and checked before anything runs.

A case names a tool (``knowledge_grep``, ``knowl_query``, ``knowledge_lookup``), its arguments as
``Store.call`` takes them (camelCase), the record ids a good answer contains (optionally graded)
and the ids it must not contain. The arguments are checked with the tool's own ``Param`` specs
(the ``validate`` of ``Store.call``), so a gold set that loads runs without an argument error.
Which ids exist is a question for the store: :func:`knowtk.lab.run.run` reports unknown ones.

Every refusal is a :class:`GoldSetError` naming the file, the line, the case and the field.
The format is documented in docs/query-lab.md.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import yaml

from knowtk.errors import InvalidArgument, KnowtkError
from knowtk.model.records import ID_PATTERN
from knowtk.query import TOOLS
from knowtk.query.args import validate

__all__ = [
    "DEFAULT_K",
    "LOOKUP_STATUSES",
    "MAX_K",
    "TOOLS_SCORED",
    "Case",
    "GoldSet",
    "GoldSetError",
    "Variant",
    "load_gold",
    "parse_gold",
]

#: The tools a gold case can score: the ones that answer a question with a ranked list of records.
TOOLS_SCORED = ("knowledge_grep", "knowl_query", "knowledge_lookup")
LOOKUP_STATUSES = ("found", "ambiguous", "missing")
DEFAULT_K = 5
MAX_K = 50  # grep's and knowl_query's largest limit: nothing ranks deeper in one answer
MAX_BYTES = 8 * 1024 * 1024  # thousands of cases fit; a larger file is not a gold set
MAX_GRADE = 10  # gains are 2**grade - 1: beyond this, one record would outweigh any ranking

CASE_KEYS = ("id", "tool", "args", "expect", "must_not", "status", "k", "note", "variants")
TOP_KEYS = ("name", "description", "k", "variants", "cases")
VARIANT_KEYS = ("args", "semantic", "note")
CSV_COLUMNS = ("id", "tool", "query", "args", "expect", "must_not", "status", "k", "note")


class GoldSetError(KnowtkError, ValueError):
    """A gold set that cannot be used as written: ``.path``, ``.line`` (1-based), ``.case`` and ``.field``."""

    code = "gold_set_invalid"

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        line: int | None = None,
        case: str | None = None,
        field: str | None = None,
    ) -> None:
        self.path, self.line, self.case, self.field = path, line, case, field
        where = (path or "<gold set>") + (f":{line}" if line else "")
        what = f"case {case!r}" if case else ""
        if field:
            what = f"{what}, {field}" if what else field
        super().__init__(f"{where}: {what + ': ' if what else ''}{message}")


@dataclass(frozen=True)
class Variant:
    """A named way to run every case: argument overrides (applied where the case's tool takes them)
    and, for ``knowl_query``, semantic search forced on or off (``None``: as installed)."""

    name: str
    args: Mapping[str, Any] = field(default_factory=dict)
    semantic: bool | None = None
    note: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "args": dict(self.args), "semantic": self.semantic, "note": self.note}


DEFAULT_VARIANT = Variant("default", note="the cases' own arguments")


@dataclass(frozen=True)
class Case:
    """One question with its known answer. ``expect`` maps id -> grade (1 = relevant; higher = better)."""

    id: str
    tool: str
    args: Mapping[str, Any]
    expect: Mapping[str, int] = field(default_factory=dict)
    must_not: tuple[str, ...] = ()
    status: str | None = None  # knowledge_lookup: the expected status
    k: int = DEFAULT_K
    note: str = ""
    overrides: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)  # variant name -> args
    line: int | None = None

    @property
    def query(self) -> str | None:
        return self.args.get("query")

    def args_for(self, variant: Variant) -> dict[str, Any]:
        """The case's arguments under ``variant``: the variant's (where this tool takes them), then the case's own."""
        names = {p.name for p in TOOLS[self.tool].params}
        out = dict(self.args)
        out.update({k: v for k, v in variant.args.items() if k in names})
        out.update(self.overrides.get(variant.name, {}))
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "tool": self.tool,
            "args": dict(self.args),
            "expect": dict(self.expect),
            "must_not": list(self.must_not),
            "status": self.status,
            "k": self.k,
            "note": self.note,
            "variants": {name: dict(a) for name, a in self.overrides.items()},
        }


@dataclass(frozen=True)
class GoldSet:
    name: str
    cases: tuple[Case, ...]
    variants: tuple[Variant, ...] = ()
    description: str = ""
    k: int = DEFAULT_K
    path: str | None = None
    sha256: str | None = None

    def __len__(self) -> int:
        return len(self.cases)

    def __iter__(self) -> Iterator[Case]:
        return iter(self.cases)

    def __getitem__(self, case_id: str) -> Case:
        for case in self.cases:
            if case.id == case_id:
                return case
        raise KeyError(case_id)

    def variant(self, name: str) -> Variant:
        if name == DEFAULT_VARIANT.name and all(v.name != name for v in self.variants):
            return DEFAULT_VARIANT
        for v in self.variants:
            if v.name == name:
                return v
        allowed = [DEFAULT_VARIANT.name, *(v.name for v in self.variants)]
        raise InvalidArgument("variant", f"the gold set has no variant {name!r}", allowed=allowed, value=name)

    def all_variants(self) -> list[Variant]:
        """``default`` (the cases as written) first, unless the gold set defines its own, then the others."""
        named = [v.name for v in self.variants]
        return list(self.variants) if DEFAULT_VARIANT.name in named else [DEFAULT_VARIANT, *self.variants]

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "description": self.description,
            "k": self.k,
            "path": self.path,
            "sha256": self.sha256,
            "variants": [v.to_dict() for v in self.variants],
            "cases": [c.to_dict() for c in self.cases],
        }


# -- reading -----------------------------------------------------------------------------------------


def load_gold(path: str | os.PathLike[str]) -> GoldSet:
    """Read a gold set from a ``.yaml``/``.yml`` or ``.csv`` file."""
    p = Path(path)
    try:
        size = p.stat().st_size
        if size > MAX_BYTES:
            raise GoldSetError(f"has {size:,} bytes; a gold set may have at most {MAX_BYTES:,}", path=str(p))
        data = p.read_bytes()
    except OSError as exc:
        raise GoldSetError(f"cannot read the file: {exc.strerror or exc}", path=str(p)) from exc
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise GoldSetError("is not UTF-8 text", path=str(p)) from exc
    fmt = "csv" if p.suffix.lower() == ".csv" else "yaml"
    if p.suffix.lower() not in (".csv", ".yaml", ".yml"):
        raise GoldSetError("a gold set is a .yaml, .yml or .csv file", path=str(p))
    gold = parse_gold(text, format=fmt, path=str(p), name=p.stem)
    return gold


def parse_gold(text: str, *, format: str = "yaml", path: str | None = None, name: str | None = None) -> GoldSet:
    """A gold set from text: ``format`` is ``yaml`` or ``csv``; ``path`` only labels errors."""
    if format not in ("yaml", "csv"):
        raise InvalidArgument("format", f"{format!r} is not a gold set format", allowed=("yaml", "csv"), value=format)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if format == "csv":
        raw, lines = _read_csv(text, path)
        raw.setdefault("name", name or "gold")
    else:
        raw, lines = _read_yaml(text, path)
        if isinstance(raw, dict):
            raw.setdefault("name", name or "gold")
    return _build(raw, lines, path, digest)


class _Loader(yaml.SafeLoader):
    """Safe YAML where dates stay text (``since: 2026-01-01`` is what the tool parses, not a datetime)."""


_Loader.yaml_implicit_resolvers = {
    first: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
    for first, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
}

Lines = dict[tuple[Any, ...], int]


def _read_yaml(text: str, path: str | None) -> tuple[Any, Lines]:
    try:
        node = yaml.compose(text, Loader=_Loader)
        data = yaml.load(text, Loader=_Loader)  # _Loader is a SafeLoader
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        problem = getattr(exc, "problem", None) or str(exc)
        raise GoldSetError(f"is not valid YAML: {problem}", path=path, line=mark.line + 1 if mark else None) from exc
    lines: Lines = {}
    if node is not None:
        _node_lines(node, (), lines)
    return data, lines


def _node_lines(node: yaml.Node, at: tuple[Any, ...], out: Lines) -> None:
    out[at] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if isinstance(key, yaml.ScalarNode):
                out[(*at, key.value)] = key.start_mark.line + 1
                _node_lines(value, (*at, key.value), out)
                out[(*at, key.value)] = key.start_mark.line + 1
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _node_lines(item, (*at, i), out)


def _read_csv(text: str, path: str | None) -> tuple[dict[str, Any], Lines]:
    """CSV: one case a row. Columns beyond ``CSV_COLUMNS`` are arguments of the case's tool."""
    reader = csv.DictReader(io.StringIO(text, newline=""))
    header = reader.fieldnames or []
    if not header:
        raise GoldSetError("has no header row", path=path, line=1)
    header = [h.strip() for h in header]
    reader.fieldnames = header
    for required in ("id", "tool", "expect"):
        if required not in header and not (required == "expect" and {"status", "must_not"} & set(header)):
            raise GoldSetError(f"has no {required!r} column (columns: {', '.join(header)})", path=path, line=1)
    cases: list[dict[str, Any]] = []
    lines: Lines = {}
    line = reader.line_num
    for row in reader:
        start, line = line + 1, reader.line_num
        if None in row:
            raise GoldSetError("has more cells than the header has columns", path=path, line=start)
        cells = {k: (v or "").strip() for k, v in row.items()}
        if not any(cells.values()) or cells.get("id", "").startswith("#"):
            continue  # blank rows and comment rows
        index = len(cases)
        case: dict[str, Any] = {"id": cells.get("id") or None, "tool": cells.get("tool") or None}
        args: dict[str, Any] = {}
        if cells.get("args"):
            try:
                args = json.loads(cells["args"])
            except json.JSONDecodeError as exc:
                raise GoldSetError(
                    f"is not a JSON object: {exc.msg}", path=path, line=start, case=case["id"], field="args"
                ) from exc
            if not isinstance(args, dict):
                raise GoldSetError("must be a JSON object", path=path, line=start, case=case["id"], field="args")
        if cells.get("query"):
            args["query"] = cells["query"]
        for column in header:
            if column not in CSV_COLUMNS and cells.get(column):
                args[column] = _cell(case.get("tool"), column, cells[column])
        case["args"] = args
        case["expect"] = _graded_ids(cells.get("expect", ""), path, start, case["id"])
        case["must_not"] = [x for x in re.split(r"[\s;,|]+", cells.get("must_not", "")) if x]
        for key in ("status", "note"):
            if cells.get(key):
                case[key] = cells[key]
        if cells.get("k"):
            case["k"] = int(cells["k"]) if cells["k"].isdigit() else cells["k"]
        cases.append(case)
        lines[("cases", index)] = start
    return {"cases": cases}, lines


def _cell(tool: str | None, column: str, value: str) -> Any:
    """A CSV cell of an argument column: text, unless the argument refuses text and the cell is JSON."""
    spec = TOOLS.get(tool or "")
    param = next((p for p in spec.params if p.name == column), None) if spec else None
    if param is None:
        return value  # the case's check names the unknown argument
    try:
        param.check(column, value)
        return value
    except InvalidArgument:
        try:
            return json.loads(value)  # 5, true, ["a", "b"]
        except json.JSONDecodeError:
            return value  # the check will refuse it, naming the argument


def _graded_ids(cell: str, path: str | None, line: int, case: str | None) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for item in re.split(r"[\s;,|]+", cell):
        if not item:
            continue
        rid, _, grade = item.partition("=")
        if grade and not grade.isdigit():
            raise GoldSetError(f"grade {grade!r} of {rid} is not a whole number", path=path, line=line, case=case)
        out[rid] = int(grade) if grade else 1
    return out


# -- checking ----------------------------------------------------------------------------------------


def _build(raw: Any, lines: Lines, path: str | None, digest: str) -> GoldSet:
    def fail(message: str, at: tuple[Any, ...] = (), case: str | None = None, field: str | None = None) -> GoldSetError:
        line = None
        for i in range(len(at), -1, -1):  # the most specific place the file has a line for
            if at[:i] in lines:
                line = lines[at[:i]]
                break
        return GoldSetError(message, path=path, line=line, case=case, field=field)

    if not isinstance(raw, dict):
        raise fail("must be a mapping with a 'cases' list")
    unknown = sorted(set(raw) - set(TOP_KEYS))
    if unknown:
        raise fail(f"unknown key {unknown[0]!r} (allowed: {', '.join(TOP_KEYS)})", (unknown[0],))
    k = _k(raw.get("k", DEFAULT_K), lambda m: fail(m, ("k",), field="k"))
    variants = _variants(raw.get("variants") or {}, fail)
    cases_raw = raw.get("cases")
    if not isinstance(cases_raw, list) or not cases_raw:
        raise fail("must have a non-empty 'cases' list", ("cases",), field="cases")
    cases: list[Case] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(cases_raw):
        case = _case(item, i, k, variants, fail)
        if case.id in seen:
            raise fail(f"the case id is used twice (first as case {seen[case.id] + 1})", ("cases", i, "id"), case.id)
        seen[case.id] = i
        cases.append(replace(case, line=lines.get(("cases", i))))
    _check_variants(cases, variants, fail)
    title = raw.get("name")
    if not isinstance(title, str) or not title.strip():
        raise fail("must be a non-empty string", ("name",), field="name")
    return GoldSet(
        name=title,
        cases=tuple(cases),
        variants=tuple(variants),
        description=str(raw.get("description") or ""),
        k=k,
        path=path,
        sha256=digest,
    )


def _check_variants(cases: list[Case], variants: list[Variant], fail: Any) -> None:
    """Every variant's argument is taken by some case's tool, and every case is valid under every variant."""
    used = {c.tool for c in cases}
    for v in variants:
        for name in v.args:
            if not any(name in {p.name for p in TOOLS[t].params} for t in used):
                raise fail(
                    f"no case's tool takes the argument {name!r}",
                    ("variants", v.name, "args", name),
                    field=f"variants.{v.name}.args",
                )
    for i, case in enumerate(cases):
        for v in variants:
            _check_args(case.tool, case.args_for(v), fail, ("cases", i), case.id, f"under variant {v.name!r}")


def _k(value: Any, fail: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_K:
        raise fail(f"must be a whole number from 1 to {MAX_K}, not {value!r}")
    return value


def _variants(raw: Any, fail: Any) -> list[Variant]:
    if not isinstance(raw, dict):
        raise fail("must be a mapping of variant name to its settings", ("variants",), field="variants")
    out = []
    for name, spec in raw.items():
        at = ("variants", name)
        if not isinstance(name, str) or not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9_.+-]{0,63}", name):
            raise fail(f"variant name {name!r} must be a short word (letters, digits, _ . + -)", at, field="variants")
        spec = spec or {}
        if not isinstance(spec, dict):
            raise fail("must be a mapping (args, semantic, note)", at, field=f"variants.{name}")
        unknown = sorted(set(spec) - set(VARIANT_KEYS))
        if unknown:
            raise fail(
                f"unknown key {unknown[0]!r} (allowed: {', '.join(VARIANT_KEYS)})", (*at, unknown[0]), field="variants"
            )
        args = spec.get("args") or {}
        if not isinstance(args, dict):
            raise fail("must be a mapping of arguments", (*at, "args"), field=f"variants.{name}.args")
        semantic = spec.get("semantic")
        if semantic is not None and not isinstance(semantic, bool):
            raise fail("must be true or false", (*at, "semantic"), field=f"variants.{name}.semantic")
        for bad in ("offset", "id"):
            if bad in args:
                raise fail(_NOT_SCORED[bad], (*at, "args", bad), field=f"variants.{name}.args")
        out.append(Variant(name, args, semantic, str(spec.get("note") or "")))
    return out


_NOT_SCORED = {
    "offset": "a case is scored from the top of its answer: offset is not allowed",
    "id": "knowl_query with id fetches one item, it ranks nothing: give a query",
}


def _case(item: Any, i: int, default_k: int, variants: list[Variant], fail: Any) -> Case:
    at: tuple[Any, ...] = ("cases", i)
    if not isinstance(item, dict):
        raise fail(f"case {i + 1} must be a mapping (id, tool, args, expect, ...)", at)
    cid = item.get("id")
    if not isinstance(cid, str) or not cid.strip():
        raise fail(f"case {i + 1} needs an 'id' (a non-empty string)", (*at, "id"), field="id")
    unknown = sorted(set(item) - set(CASE_KEYS))
    if unknown:
        raise fail(f"unknown key {unknown[0]!r} (allowed: {', '.join(CASE_KEYS)})", (*at, unknown[0]), cid)
    tool, args = _tool_and_args(item, fail, at, cid)
    expect = _expect(item.get("expect"), fail, (*at, "expect"), cid)
    must_not = _ids(item.get("must_not"), fail, (*at, "must_not"), cid, "must_not")
    both = sorted(set(expect) & set(must_not))
    if both:
        raise fail(f"{both[0]} is both expected and must_not", (*at, "must_not"), cid, "must_not")
    status = _status(item.get("status"), tool, fail, at, cid)
    if not expect and not must_not and status is None:
        raise fail("expects nothing: give expect, must_not or (for lookup) status", at, cid)
    k = _k(item["k"], lambda m: fail(m, (*at, "k"), cid, "k")) if "k" in item else default_k
    overrides = _overrides(item.get("variants") or {}, variants, fail, at, cid)
    note = item.get("note") or ""
    return Case(cid, tool, dict(args), expect, must_not, status, k, str(note), overrides)


def _tool_and_args(item: dict[str, Any], fail: Any, at: tuple[Any, ...], cid: str) -> tuple[str, dict[str, Any]]:
    """A case's tool (one a gold case can score) and its arguments, valid for the tool."""
    tool = item.get("tool")
    if tool not in TOOLS_SCORED:
        raise fail(
            f"{tool!r} is not a tool a gold case can score (allowed: {', '.join(TOOLS_SCORED)})",
            (*at, "tool"),
            cid,
            "tool",
        )
    args = item.get("args") or {}
    if not isinstance(args, dict):
        raise fail(
            "must be a mapping of the tool's arguments (camelCase, as Store.call takes them)",
            (*at, "args"),
            cid,
            "args",
        )
    for bad in ("offset", "id"):
        if bad in args and not (bad == "id" and tool != "knowl_query"):
            raise fail(_NOT_SCORED[bad], (*at, "args", bad), cid, f"args.{bad}")
    if tool == "knowl_query" and not args.get("query"):
        raise fail(
            "a knowl_query case needs a query (without one, items are listed by date)", (*at, "args"), cid, "args.query"
        )
    _check_args(tool, args, fail, at, cid, "")
    return tool, args


def _status(status: Any, tool: str, fail: Any, at: tuple[Any, ...], cid: str) -> str | None:
    """The lookup status a knowledge_lookup case expects, if it names one."""
    if status is not None:
        if tool != "knowledge_lookup":
            raise fail("only knowledge_lookup cases expect a status", (*at, "status"), cid, "status")
        if status not in LOOKUP_STATUSES:
            raise fail(
                f"{status!r} is not a lookup status (allowed: {', '.join(LOOKUP_STATUSES)})",
                (*at, "status"),
                cid,
                "status",
            )
    return status


def _overrides(
    raw: Any, variants: list[Variant], fail: Any, at: tuple[Any, ...], cid: str
) -> dict[str, dict[str, Any]]:
    """A case's own arguments under some of the declared variants."""
    if not isinstance(raw, dict):
        raise fail("must map variant names to argument overrides", (*at, "variants"), cid, "variants")
    declared = {v.name for v in variants}
    overrides: dict[str, dict[str, Any]] = {}
    for name, extra in raw.items():
        if name not in declared:
            allowed = ", ".join(sorted(declared)) or "none declared: add them under the top-level 'variants'"
            raise fail(
                f"names variant {name!r}, which the gold set does not declare (declared: {allowed})",
                (*at, "variants", name),
                cid,
                "variants",
            )
        if not isinstance(extra, dict):
            raise fail("must be a mapping of arguments", (*at, "variants", name), cid, f"variants.{name}")
        for bad in ("offset", "id"):
            if bad in extra:
                raise fail(_NOT_SCORED[bad], (*at, "variants", name, bad), cid, f"variants.{name}")
        overrides[name] = dict(extra)
    return overrides


def _check_args(tool: str, args: Mapping[str, Any], fail: Any, at: tuple[Any, ...], cid: str, under: str) -> None:
    try:
        validate(tool, TOOLS[tool].params, args, python=False)
    except InvalidArgument as exc:
        where = (*at, "args", exc.argument) if exc.argument in args else (*at, "args")
        suffix = f" ({under})" if under else ""
        raise fail(f"{exc}{suffix}", where, cid, f"args.{exc.argument}") from exc


def _expect(raw: Any, fail: Any, at: tuple[Any, ...], cid: str) -> dict[str, int]:
    if raw is None:
        return {}
    if isinstance(raw, str | list):
        return dict.fromkeys(_ids(raw, fail, at, cid, "expect"), 1)
    if not isinstance(raw, dict):
        raise fail("must be an id, a list of ids, or a mapping of id to grade", at, cid, "expect")
    out = {}
    for rid, grade in raw.items():
        _id_ok(rid, fail, at, cid, "expect")
        if isinstance(grade, bool) or not isinstance(grade, int) or not 1 <= grade <= MAX_GRADE:
            raise fail(
                f"grade of {rid} must be a whole number from 1 to {MAX_GRADE}, not {grade!r}", (*at, rid), cid, "expect"
            )
        out[rid] = grade
    return out


def _ids(raw: Any, fail: Any, at: tuple[Any, ...], cid: str, name: str) -> tuple[str, ...]:
    if raw is None:
        return ()
    items = [raw] if isinstance(raw, str) else raw
    if not isinstance(items, list):
        raise fail("must be an id or a list of ids", at, cid, name)
    for i, rid in enumerate(items):
        _id_ok(rid, fail, (*at, i), cid, name)
    dup = next((r for i, r in enumerate(items) if r in items[:i]), None)
    if dup is not None:
        raise fail(f"{dup} is listed twice", at, cid, name)
    return tuple(items)


def _id_ok(rid: Any, fail: Any, at: tuple[Any, ...], cid: str, name: str) -> None:
    if not isinstance(rid, str) or not ID_PATTERN.fullmatch(rid):
        raise fail(f"{rid!r} is not a record id (letters, digits and . _ : -, at most 128)", at, cid, name)
