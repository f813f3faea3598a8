"""``knowtk lint`` as CI runs it: exit codes, the four formats (SARIF against the SARIF 2.1.0 schema), the
``lint:`` settings of knowtk.yaml and ``--rule``, the Python method's frame, and the pre-commit hook."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from knowtk.query.lint.formats import github
from tests.helpers import REPO, StoreBuilder, markdown_digest, required_in_ci

SCHEMA = REPO / "tests" / "data" / "sarif" / "sarif-schema-2.1.0.json"


def knowtk(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "knowtk", *args], capture_output=True, text=True, env=env, timeout=120, cwd=cwd
    )


def adr_folder(root: Path) -> StoreBuilder:
    """An ADR folder with one error (a missing replacement) and one warning (an anchor), inside a repository."""
    b = StoreBuilder(root)
    b.raw("docs/adr/knowtk.yaml", "profile: adr\n")
    b.raw("docs/adr/0001-a.md", "# 1. A\n\nDate: 2024-01-01\n\n## Status\n\nSuperseded by [9. Z](0009-z.md)\n")
    b.raw("docs/adr/0002-b.md", "# 2. B\n\nDate: 2024-01-02\n\n## Status\n\nAccepted\n\nSee [A](0001-a.md#nope).\n")
    return b


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    adr_folder(tmp_path / "repo")
    return tmp_path / "repo"


def test_exit_codes_clean_errors_and_could_not_run(repo: Path, tmp_path: Path) -> None:
    done = knowtk("lint", "docs/adr", cwd=repo)
    assert done.returncode == 1, done.stderr
    assert "docs/adr/0001-a.md\n  7 " in done.stdout and "1 error(s), 1 warning(s) in 2 of 2 file(s)" in done.stdout
    off = knowtk(
        "lint", "docs/adr", "--rule", "missing-supersession-target=warning", "--rule", "broken-link=off", cwd=repo
    )
    assert off.returncode == 0, off.stdout  # warnings only
    clean = StoreBuilder(tmp_path / "clean")
    clean.page("a", "A", "[self](a.md)")
    done = knowtk("lint", str(clean.root))
    assert (done.returncode, done.stdout.strip()) == (0, "no findings in 1 file(s)")
    for bad in (["--rule", "no-such-rule=error"], ["--rule", "broken-link=loud"], ["--format", "xml"]):
        done = knowtk("lint", "docs/adr", *bad, cwd=repo)
        assert done.returncode == 2 and done.stderr, bad
    done = knowtk("lint", str(tmp_path / "missing"))
    assert done.returncode == 2 and "could not run" in done.stderr


def test_json_is_the_tools_answer(repo: Path) -> None:
    done = knowtk("lint", "docs/adr", "--format", "json", cwd=repo)
    answer = json.loads(done.stdout)
    assert set(answer) == {"findings", "errors", "warnings", "files", "checked", "rules", "snapshot", "coverage"}
    assert (answer["errors"], answer["warnings"], answer["files"], answer["checked"]) == (1, 1, 2, 2)
    first = answer["findings"][0]
    assert first == {
        "rule": "missing-supersession-target",
        "severity": "error",
        "path": "0001-a.md",  # relative to the store
        "line": 7,
        "column": None,
        "message": first["message"],
        "id": "0001",
    }
    assert json.loads(knowtk("lint", "docs/adr", "--json", cwd=repo).stdout)["findings"] == answer["findings"]


def test_github_annotations_name_the_repository_file(repo: Path) -> None:
    done = knowtk("lint", "docs/adr", "--format", "github", cwd=repo)
    lines = done.stdout.splitlines()
    assert lines[0].startswith("::error file=docs/adr/0001-a.md,line=7,title=knowtk lint missing-supersession-target::")
    assert lines[1].startswith("::warning file=docs/adr/0002-b.md,line=9,col=5,title=knowtk lint broken-anchor::")
    assert done.returncode == 1


def test_github_escapes_what_a_workflow_command_reads() -> None:
    finding = {"rule": "r", "severity": "error", "path": "a,b:c.md", "line": 3, "column": None, "message": "50%\nx"}
    out = github({"findings": [finding]})
    assert out == "::error file=a%2Cb%3Ac.md,line=3,title=knowtk lint r::50%25%0Ax"


def test_sarif_is_valid_sarif_2_1_0(repo: Path) -> None:
    done = knowtk("lint", "docs/adr", "--format", "sarif", cwd=repo)
    log = json.loads(done.stdout)
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.validate(log, schema, cls=jsonschema.Draft4Validator)  # the schema's own draft
    run = log["runs"][0]
    results = run["results"]
    assert [r["ruleId"] for r in results] == ["missing-supersession-target", "broken-anchor"]
    location = results[0]["locations"][0]["physicalLocation"]
    assert location == {"artifactLocation": {"uri": "docs/adr/0001-a.md"}, "region": {"startLine": 7}}
    rules = run["tool"]["driver"]["rules"]
    assert rules[results[1]["ruleIndex"]]["id"] == "broken-anchor"
    with pytest.raises(jsonschema.ValidationError):  # the schema does check: a level SARIF does not have
        jsonschema.validate({**log, "runs": [{**run, "results": [{**results[0], "level": "fatal"}]}]}, schema)


def test_knowtk_yaml_sets_severities_and_ignored_paths(repo: Path) -> None:
    config = repo / "docs" / "adr" / "knowtk.yaml"
    config.write_text("profile: adr\nlint:\n  rules: {missing-supersession-target: warning}\n  ignore: [0002-*]\n")
    done = knowtk("lint", "docs/adr", "--json", cwd=repo)
    answer = json.loads(done.stdout)
    assert done.returncode == 0 and [(f["rule"], f["severity"]) for f in answer["findings"]] == [
        ("missing-supersession-target", "warning")
    ]
    assert knowtk("lint", "docs/adr", "--rule", "missing-supersession-target=error", cwd=repo).returncode == 1
    config.write_text("profile: adr\nlint:\n  rules: {broken-anchor: off}\n  ignore: [archive/]\n")
    assert [f["rule"] for f in json.loads(knowtk("lint", "docs/adr", "--json", cwd=repo).stdout)["findings"]] == [
        "missing-supersession-target"
    ]
    for bad in ("lint: {rules: {nope: error}}", "lint: {rules: [x]}", "lint: {ignored: [x]}", "lint: [x]"):
        config.write_text(f"profile: adr\n{bad}\n")
        done = knowtk("lint", "docs/adr", cwd=repo)
        assert done.returncode == 2 and "knowtk.yaml lint" in done.stderr, bad


def test_store_lint_gives_a_frame_and_writes_no_markdown(repo: Path) -> None:
    import knowtk as kt

    before = markdown_digest(repo)
    with kt.open_store(repo / "docs" / "adr") as store:
        result = store.lint(rules=["broken-anchor=off"])
        frame = result.to_frame()
        assert list(frame.columns) == ["path", "line", "severity", "rule", "message", "id"]
        assert frame[["path", "line", "rule"]].values.tolist() == [["0001-a.md", 7, "missing-supersession-target"]]
        assert store.lint().to_dict()["errors"] == 1
    assert markdown_digest(repo) == before


def _pre_commit() -> list[str] | None:
    found = shutil.which("pre-commit", path=os.path.dirname(sys.executable))
    return [found] if found else None


def test_the_pre_commit_hook_runs(repo: Path, tmp_path: Path) -> None:
    """The hook of .pre-commit-hooks.yaml, run by pre-commit in a repository: it fails on an error, passes once
    fixed. Its ``language: python`` would make pre-commit install knowtk from the network, which the tests have
    not: the hook runs as a local ``language: system`` hook with the declared entry, files and pass_filenames."""
    command = _pre_commit()
    required_in_ci(None if command else "pre-commit is not installed (pip install pre-commit; the dev extra has it)")
    assert command is not None
    hook = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())[0]
    local = {
        **{k: hook[k] for k in ("id", "name", "entry", "pass_filenames", "files")},
        "language": "system",
        "args": ["docs/adr"],
    }
    (repo / ".pre-commit-config.yaml").write_text(yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]}))
    (repo / ".gitignore").write_text(".knowtk/\n")
    bin_dir = tmp_path / "bin"  # `knowtk` on the PATH: this checkout's, run by the tests' Python
    bin_dir.mkdir()
    (bin_dir / "knowtk").write_text(f'#!/bin/sh\nexec {sys.executable} -m knowtk "$@"\n')
    (bin_dir / "knowtk").chmod(0o755)
    env = {
        **os.environ,
        "PYTHONPATH": str(REPO),
        "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}",
        "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home"),
        "GIT_AUTHOR_NAME": "t",
        "GIT_AUTHOR_EMAIL": "t@example.org",
        "GIT_COMMITTER_NAME": "t",
        "GIT_COMMITTER_EMAIL": "t@example.org",
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(args, cwd=repo, env=env, capture_output=True, text=True, timeout=300)

    assert run("git", "init", "-q").returncode == 0
    assert run("git", "add", "-A").returncode == 0
    failed = run(*command, "run", "--all-files")
    assert failed.returncode == 1, failed.stdout + failed.stderr
    assert "missing-supersession-target" in failed.stdout and "Failed" in failed.stdout
    (repo / "docs/adr/0001-a.md").write_text(
        "# 1. A\n\nDate: 2024-01-01\n\n## Status\n\nSuperseded by [2. B](0002-b.md)\n"
    )
    (repo / "docs/adr/0002-b.md").write_text("# 2. B\n\nDate: 2024-01-02\n\n## Status\n\nAccepted\n")
    run("git", "add", "-A")
    passed = run(*command, "run", "--all-files")
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert "Passed" in passed.stdout


def _answer(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    return json.loads(done.stdout)


def test_the_demo_stores_deliberate_defects_are_found(tmp_path: Path) -> None:
    from tests.helpers import copy_demo

    demo = copy_demo(tmp_path / "demo")
    answer = _answer(knowtk("--store", str(demo), "lint", "--json"))
    rules = {(f["rule"], f["path"]) for f in answer["findings"]}
    assert {
        ("invalid-frontmatter", "notes/bad-id.md"),
        ("duplicate-id", "notes/retention-draft.md"),
        ("duplicate-id", "notes/archive/retention-draft.md"),
        ("invalid-date", "notes/offsite-recap.md"),
        ("invalid-date", "claims/act-2026-04-15-search-sync.md"),
        ("invalid-date", "notes/transcription-conventions.md"),
        ("invalid-date", "notes/sync-checklist.md"),
        ("invalid-frontmatter", "notes/broken-frontmatter.md"),
        ("invalid-frontmatter", "notes/list-frontmatter.md"),
        ("missing-reference", "claims/act-2026-02-13-pipeline-sync.md"),
        ("missing-reference", "relations/rel-viktor-hale-advises-atlas-legacy.md"),
        ("depends-on-withdrawn", "claims/fnd-2026-006.md"),
        ("missing-supersession-target", "decisions/dec-2025-030.md"),
        ("supersession-cycle", "lab/decisions/lab-dec-005.md"),
        ("supersession-cycle", "lab/decisions/lab-dec-006.md"),
    } <= rules


def test_profile_option_reads_a_folder_without_knowtk_yaml(tmp_path: Path) -> None:
    b = StoreBuilder(tmp_path / "adr")
    b.raw("0001-a.md", "# 1. A\n\n## Status\n\nSuperseded by [2. B](0002-b.md)\n")
    b.raw("0002-b.md", "# 2. B\n\n## Status\n\nAccepted\n")
    assert knowtk("lint", str(b.root)).returncode == 1  # read as knowtk records: no frontmatter
    done = knowtk("lint", str(b.root), "--profile", "adr", "--format", "json")
    assert done.returncode == 0 and json.loads(done.stdout)["findings"] == []
