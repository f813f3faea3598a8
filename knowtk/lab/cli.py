"""``knowtk eval GOLD``: run a gold set on a store, print the metrics, and gate on a baseline.

    knowtk eval data/fixtures/gold/demo.yaml --store data/fixtures/demo --save run.json
    knowtk eval data/fixtures/gold/demo.yaml --store data/fixtures/demo --baseline run.json

Exit codes: 0 ok; 1 a metric dropped against the baseline, or a case could not be scored (an
expected id the store does not have, a refused call), or another refusal of the store; 2 bad
arguments, a malformed gold set or an unreadable baseline.
``eval_main`` is the whole command; ``python -m knowtk.lab.cli`` runs it too.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from knowtk.errors import InvalidArgument, KnowtkError
from knowtk.lab.goldset import GoldSetError, Variant, load_gold
from knowtk.lab.metrics import METRICS
from knowtk.lab.scored import CHECKS, ScoredRun
from knowtk.store import open_store

if TYPE_CHECKING:
    from knowtk.lab.baseline import Regression

__all__ = ["EVAL_HELP", "add_eval_options", "eval_main", "eval_parser", "report", "run_eval"]

OK, DROPPED, BAD = 0, 1, 2
EVAL_HELP = "score the store against a gold set; exit 1 when a metric drops"


def _variants(given: list[str] | None) -> list[str | Variant] | None:
    if not given:
        return None
    out: list[str | Variant] = []
    for item in given:
        name, sep, spec = item.partition("=")
        if not sep:
            out.append(name)
            continue
        try:
            args = json.loads(spec)
        except json.JSONDecodeError as exc:
            raise InvalidArgument("--variant", f"{item!r}: the part after = is not JSON ({exc.msg})") from exc
        if not isinstance(args, dict):
            raise InvalidArgument("--variant", f"{item!r}: the part after = must be a JSON object of arguments")
        semantic = args.pop("semantic", None)
        if semantic is not None and not isinstance(semantic, bool):
            raise InvalidArgument("--variant", f"{item!r}: semantic must be true or false")
        out.append(Variant(name, args, semantic))
    return out


def add_eval_options(p: argparse.ArgumentParser) -> None:
    """``knowtk eval``'s own options; ``--store``, ``--state-dir`` and ``--json`` come with the command line."""
    p.add_argument("gold", help="the gold set (.yaml, .yml or .csv; docs/query-lab.md)")
    p.add_argument("--baseline", metavar="FILE", help="a run saved with --save: exit 1 when a metric drops below it")
    p.add_argument("--save", metavar="FILE", help="save this run as JSON (a baseline for later runs)")
    p.add_argument(
        "--variant",
        action="append",
        metavar="NAME[=JSON]",
        help='run only this variant of the gold set (repeatable); NAME={"mode": "any"} defines one',
    )
    p.add_argument("--tolerance", type=float, default=0.0, help="a drop smaller than this passes (default 0)")
    p.add_argument("--per-case", action="store_true", help="also fail when a single case's metric drops")


def eval_parser() -> argparse.ArgumentParser:
    """``knowtk eval`` standing alone (``eval_main``, ``python -m knowtk.lab.cli``): its options and the store's."""
    p = argparse.ArgumentParser(prog="knowtk eval", description=EVAL_HELP)
    p.add_argument("--store", default=".", help="the store folder (default: the current folder)")
    p.add_argument("--state-dir", help="where to keep state.sqlite (default: STORE/.knowtk)")
    p.add_argument("--json", action="store_true", help="print the run as JSON instead of a table")
    add_eval_options(p)
    return p


def eval_main(argv: Sequence[str] | None = None) -> int:
    """``knowtk eval ARGV``; returns the exit code (0 ok, 1 dropped or refused, 2 bad arguments or gold set)."""
    try:
        options = eval_parser().parse_args(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:  # --help (0); bad usage, already explained on stderr (2)
        return exc.code if isinstance(exc.code, int) else BAD
    try:
        return run_eval(options)
    except InvalidArgument as exc:
        print(f"knowtk eval: {exc}", file=sys.stderr)
        return BAD
    except KnowtkError as exc:
        print(f"knowtk eval: {exc}", file=sys.stderr)
        return DROPPED


def run_eval(options: argparse.Namespace) -> int:
    """Run the parsed ``knowtk eval`` command; returns its exit code."""
    # pandas comes with the run and the baseline: imported when a gold set runs, so that building the
    # command line (which loads this plug-in) stays as fast as before (tests/test_cli.py)
    from knowtk.lab.baseline import check, load_run, save_run
    from knowtk.lab.runner import run

    try:
        gold = load_gold(options.gold)
        variants = _variants(options.variant)
        store = open_store(options.store, state_dir=options.state_dir, profile=getattr(options, "profile", None))
        baseline = load_run(options.baseline) if options.baseline else None
        result = run(gold, store, variants=variants)
    except (GoldSetError, InvalidArgument) as exc:
        print(f"knowtk eval: {exc}", file=sys.stderr)
        return BAD
    except KnowtkError as exc:
        print(f"knowtk eval: {exc}", file=sys.stderr)
        return DROPPED
    regression = check(result, baseline, tolerance=options.tolerance, per_case=options.per_case) if baseline else None
    if options.save:
        try:
            save_run(result, options.save)
        except InvalidArgument as exc:
            print(f"knowtk eval: {exc}", file=sys.stderr)
            return BAD
    if options.json:
        print(
            json.dumps(
                {"run": result.to_dict(), "regression": regression.to_dict() if regression else None},
                indent=1,
                ensure_ascii=False,
                default=str,
            )
        )
    else:
        print(report(result, regression))
    if result.problems:
        print(f"knowtk eval: {len(result.problems)} case run(s) could not be scored", file=sys.stderr)
        return DROPPED
    if regression is not None and not regression.ok:
        print("knowtk eval: a metric dropped against the baseline", file=sys.stderr)
        return DROPPED
    return OK


def _number(value: Any) -> str:
    return "—" if value is None else f"{value:.3f}"


def report(result: ScoredRun, regression: Regression | None = None) -> str:
    """The run as text: metrics per variant, unscored cases, misses with their why-not, the baseline check."""
    store = result.meta["store"]
    lines = [
        f"gold set {result.gold['name']!r} ({len(result.gold['cases'])} cases, k={result.gold['k']}) on store "
        f"{store['name']!r} (snapshot {store['snapshot']}), knowtk {result.meta['knowtkVersion']}",
        "",
        *_metric_lines(result),
        *_miss_lines(result),
    ]
    for note in result.meta.get("notes") or []:
        lines.append(f"note: {note}")
    if regression is not None:
        lines += _regression_lines(regression)
    return "\n".join(lines)


def _metric_lines(result: ScoredRun) -> list[str]:
    """A table of the means, one row per variant, then the cases that could not be scored."""
    names = (*METRICS, *CHECKS)
    width = max(len(v) for v in result.variant_names)
    lines = [f"{'variant':<{width}}  " + "  ".join(f"{n:>9}" for n in names) + "  scored"]
    for name, values in result.summary().items():
        cells = "  ".join(f"{_number(values[n]):>9}" for n in names)
        lines.append(f"{name:<{width}}  {cells}  {values['scored']}/{values['cases']}")
    for p in result.problems:
        lines.append(f"UNSCORED {p['case']} [{p['variant']}]: {p['message']}")
    return lines


def _miss_lines(result: ScoredRun) -> list[str]:
    """Every expected id not in its case's first k, and why; the superseded ones counted through a replacement."""
    lines = []
    misses = [(c, e) for c in result.cases for e in c["expected"] if e["rank"] is None or e["rank"] > c["k"]]
    if misses:
        lines += ["", "misses (expected id not in the first k) and why:"]
        for c, e in misses:
            counted = f" (counted as its replacement {e['counted']})" if e["replaced"] else ""
            why = (e.get("why") or {}).get("reason", "")
            lines.append(f"  {c['case']} [{c['variant']}] {e['id']}{counted}: {why}")
    replaced = sorted({(e["id"], e["counted"]) for c in result.cases for e in c["expected"] if e["replaced"]})
    if replaced:
        lines.append("")
        lines.append(
            "superseded expectations counted through their current replacement: "
            + ", ".join(f"{a} → {b}" for a, b in replaced)
        )
    return lines


def _regression_lines(regression: Regression) -> list[str]:
    lines = ["", f"against the baseline: {'OK' if regression.ok else 'DROPPED'}"]
    lines += [f"  note: {n}" for n in regression.notes]
    lines += [f"  variant {v!r} is in the baseline but was not run" for v in regression.missing_variants]
    for r in regression.dropped:
        lines.append(f"  {r['variant']} {r['metric']}: {_number(r['baseline'])} → {_number(r['current'])}")
    for d in regression.case_drops:
        lines.append(
            f"  case {d['case']} [{d['variant']}] {d['metric']}: {_number(d['baseline'])} → {_number(d['current'])}"
        )
    return lines


if __name__ == "__main__":
    sys.exit(eval_main(sys.argv[1:]))
