"""Baselines (save, load, check) and ``knowtk eval`` (knowtk.lab.cli.eval_main): output and exit codes."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import knowtk
from knowtk import InvalidArgument
from knowtk.lab import check, load_run, parse_gold, run, save_run
from knowtk.lab.cli import eval_main
from tests.helpers import REPO, StoreBuilder, markdown_digest

GOLD = """\
name: zoo
k: 2
variants:
  wide: {args: {mode: any}}
cases:
  - {id: crossing, tool: knowledge_grep, args: {query: zebra crossing}, expect: a}
  - {id: zebra, tool: knowledge_grep, args: {query: zebra}, expect: {b: 2, a: 1}}
  - {id: name, tool: knowledge_lookup, args: {query: Zebra}, status: found, expect: b}
"""


@pytest.fixture
def zoo(builder: StoreBuilder, tmp_path: Path) -> tuple[StoreBuilder, Path]:
    builder.page("a", "Zebra crossing", "A zebra crossing near the road.")
    builder.page("b", "Zebra", "Facts about the zebra.")
    path = tmp_path / "zoo.yaml"
    path.write_text(GOLD, encoding="utf-8")
    return builder, path


def args(builder: StoreBuilder, gold: Path, tmp_path: Path, *more: str) -> list[str]:
    return [str(gold), "--store", str(builder.root), "--state-dir", str(tmp_path / "state"), *more]


def test_a_saved_run_round_trips_with_snapshot_and_version(zoo, tmp_path: Path) -> None:
    builder, _ = zoo
    with builder.open() as s:
        result = run(parse_gold(GOLD), s)
        path = save_run(result, tmp_path / "run.json")
        data = json.loads(path.read_text(encoding="utf-8"))
        assert data["format"] == "knowtk-lab-run/1" and data["meta"]["knowtkVersion"] == knowtk.__version__
        assert data["meta"]["store"]["snapshot"] == s.grep("zebra")["snapshot"]
        assert data["gold"]["sha256"] == parse_gold(GOLD).sha256
        again = load_run(path)
    assert again.summary() == result.summary() and again.cases == result.cases
    reg = check(result, again)
    assert reg.ok and not reg.dropped and "store unchanged since the baseline" in reg.notes
    assert set(reg.to_frame()["variant"]) == {"default", "wide"}


def test_a_drop_is_a_regression_and_a_rise_is_not(zoo, tmp_path: Path) -> None:
    builder, _ = zoo
    gold = parse_gold(GOLD)
    with builder.open() as s:
        before = run(gold, s)
        builder.page("a", "Zebra road", "A zebra near the road.")  # no longer says "crossing"
        after = run(gold, s)
    reg = check(after, before)
    assert not reg.ok
    dropped = {(r["variant"], r["metric"]) for r in reg.dropped}
    assert ("default", "hit@1") in dropped and ("default", "recall@k") in dropped
    assert ("wide", "hit@1") in dropped and ("wide", "recall@k") not in dropped  # any word: found, lower down
    assert {d["case"] for d in reg.case_drops} == {"crossing"}
    assert "store changed since the baseline" in reg.notes
    assert check(before, after).ok  # the other way round, everything rose
    loose = check(after, before, tolerance=0.9)
    assert loose.ok or all(r["baseline"] - r["current"] > 0.9 for r in loose.dropped)
    with pytest.raises(InvalidArgument, match="tolerance"):
        check(after, before, tolerance=-1)


def test_check_compares_on_the_cases_both_runs_scored(zoo) -> None:
    builder, _ = zoo
    fewer = GOLD.rsplit("  - {id: name", 1)[0]
    with builder.open() as s:
        base, now = run(parse_gold(GOLD), s), run(parse_gold(fewer), s)
    reg = check(now, base)
    assert reg.ok and any("gold set changed" in n for n in reg.notes)
    assert not any(r["metric"] == "status_ok" for r in reg.rows)  # the lookup case is gone from both sides


def test_per_case_gating_and_missing_variants(zoo) -> None:
    builder, _ = zoo
    gold = parse_gold(GOLD)
    with builder.open() as s:
        base = run(gold, s)
        only = run(gold, s, variants=["default"])
    assert check(only, base).ok  # a chosen subset: the other variant is noted, not missing
    from knowtk.lab import LabRun

    dropped_variant = LabRun.from_dict(
        {**base.to_dict(), "variants": base.variants[:1], "cases": [c for c in base.cases if c["variant"] == "default"]}
    )
    dropped_variant.meta = {**dropped_variant.meta, "variantsChosen": False}
    assert check(dropped_variant, base).missing_variants == ["wide"] and not check(dropped_variant, base).ok


def test_load_run_refuses_what_is_not_a_run(tmp_path: Path) -> None:
    (tmp_path / "x.json").write_text('{"format": "other"}', encoding="utf-8")
    (tmp_path / "y.json").write_text("{nope", encoding="utf-8")
    for name, message in (("x.json", "not a saved lab run"), ("y.json", "not JSON"), ("z.json", "cannot read")):
        with pytest.raises(InvalidArgument, match=message) as info:
            load_run(tmp_path / name)
        assert info.value.argument == "baseline"


# -- the command line ------------------------------------------------------------------------------


def test_eval_prints_metrics_and_saves_a_baseline(zoo, tmp_path: Path, capsys) -> None:
    builder, gold = zoo
    before = markdown_digest(builder.root)
    assert eval_main(args(builder, gold, tmp_path, "--save", str(tmp_path / "base.json"))) == 0
    out = capsys.readouterr().out
    assert "gold set 'zoo' (3 cases, k=2)" in out and "default" in out and "wide" in out and "3/3" in out
    assert load_run(tmp_path / "base.json").variant_names == ["default", "wide"]
    assert eval_main(args(builder, gold, tmp_path, "--baseline", str(tmp_path / "base.json"))) == 0
    assert "against the baseline: OK" in capsys.readouterr().out
    assert markdown_digest(builder.root) == before  # evaluating never writes a record


def test_eval_exits_1_when_a_metric_drops(zoo, tmp_path: Path, capsys) -> None:
    builder, gold = zoo
    base = str(tmp_path / "base.json")
    assert eval_main(args(builder, gold, tmp_path, "--save", base)) == 0
    builder.page("a", "Zebra road", "A zebra near the road.")
    capsys.readouterr()
    assert eval_main(args(builder, gold, tmp_path, "--baseline", base)) == 1
    captured = capsys.readouterr()
    assert "against the baseline: DROPPED" in captured.out and "default hit@1: 1.000 → 0.667" in captured.out
    assert "case crossing [default] hit@1: 1.000 → 0.000" in captured.out
    assert "crossing [default] a: not matched (lacks crossing)" in captured.out
    assert "a metric dropped" in captured.err
    wide = ("--baseline", base, "--variant", "wide", "--tolerance", "0.4")
    assert eval_main(args(builder, gold, tmp_path, *wide)) == 0  # every mean within 0.4 of the baseline
    assert eval_main(args(builder, gold, tmp_path, *wide, "--per-case")) == 1  # one case fell by 1.0
    capsys.readouterr()
    assert eval_main(args(builder, gold, tmp_path, "--baseline", base, "--json")) == 1
    data = json.loads(capsys.readouterr().out)
    assert data["regression"]["ok"] is False and data["run"]["summary"]["default"]["hit@1"] < 1


def test_eval_exits_2_on_bad_arguments_and_malformed_gold_sets(zoo, tmp_path: Path, capsys) -> None:
    builder, gold = zoo
    bad = tmp_path / "bad.yaml"
    bad.write_text(GOLD.replace("knowledge_lookup", "knowledge_lokup"), encoding="utf-8")
    assert eval_main(args(builder, bad, tmp_path)) == 2
    err = capsys.readouterr().err
    assert f"{bad}:8" in err and "knowledge_lokup" in err and "case 'name'" in err
    assert eval_main(args(builder, gold, tmp_path, "--variant", "nope")) == 2
    assert "no variant 'nope'" in capsys.readouterr().err
    assert eval_main(args(builder, gold, tmp_path, "--variant", "x={bad")) == 2
    assert eval_main(args(builder, gold, tmp_path, "--variant", 'x={"mode": "some"}')) == 2
    # the store cannot be read: a refusal (1), as in every knowtk command
    assert eval_main([str(gold), "--store", str(tmp_path / "absent")]) == 1
    assert eval_main(args(builder, gold, tmp_path, "--baseline", str(tmp_path / "absent.json"))) == 2
    assert eval_main([]) == 2  # argparse: GOLD is required
    assert eval_main(args(builder, gold, tmp_path, "--save", str(tmp_path / "no" / "dir" / "r.json"))) == 2


def test_eval_exits_1_when_a_case_cannot_be_scored(zoo, tmp_path: Path, capsys) -> None:
    builder, gold = zoo
    gold.write_text(GOLD.replace("expect: a}", "expect: zebar}"), encoding="utf-8")
    assert eval_main(args(builder, gold, tmp_path)) == 1
    captured = capsys.readouterr()
    assert "UNSCORED crossing [default]: no file in the store has id zebar" in captured.out
    assert "could not be scored" in captured.err


def test_variants_defined_on_the_command_line(zoo, tmp_path: Path, capsys) -> None:
    builder, gold = zoo
    assert eval_main(args(builder, gold, tmp_path, "--variant", "default", "--variant", 'top1={"limit": 1}')) == 0
    out = capsys.readouterr().out
    assert "top1" in out and "wide" not in out


def test_python_dash_m_runs_the_same_command(tmp_path: Path) -> None:
    demo_gold = REPO / "data" / "fixtures" / "gold" / "demo.csv"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "knowtk.lab.cli",
            str(demo_gold),
            "--store",
            str(REPO / "data" / "fixtures" / "demo"),
            "--state-dir",
            str(tmp_path / "state"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "gold set 'demo' (19 cases, k=5)" in proc.stdout
    assert "gpu-budget [default] dec-2025-009: excluded by chain_dead_end" in proc.stdout
