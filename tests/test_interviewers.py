"""Take-home bundles hold what a candidate needs and nothing the grader keeps back; hints come
one at a time."""

from __future__ import annotations

import csv
import os
import re
import shutil
import subprocess
import zipfile
from pathlib import Path

import pytest

from grading import state
from tests.helpers import ROOT, run_grader


def test_bundle_holds_exercises_and_no_answers(tmp_path: Path) -> None:
    out = tmp_path / "take-home"
    done = run_grader(["bundle", "token_bucket", "--output", str(out)])
    assert done.code == 0, done.stderr
    files = sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
    assert files == ["README.md", "conftest.py", "kata_contract.py", "pyproject.toml",
                     "token_bucket/README.md",
                     "token_bucket/hints.md", "token_bucket/test_token_bucket.py",
                     "token_bucket/token_bucket.py"]
    text = "\n".join((out / f).read_text(encoding="utf-8") for f in files)
    reference = (ROOT / "solutions" / "token_bucket.py").read_text(encoding="utf-8")
    assert "def _wait(" in reference and "def _wait(" not in text, "the reference leaked"
    assert "uv run pytest" in (out / "README.md").read_text(encoding="utf-8")
    pyproject = (out / "pyproject.toml").read_text(encoding="utf-8")
    assert "pytest" in pyproject and "fastapi" not in pyproject, pyproject


def test_bundle_zip_has_one_top_folder(tmp_path: Path) -> None:
    out = tmp_path / "take-home.zip"
    done = run_grader(["bundle", "token_bucket", "--output", str(out)])
    assert done.code == 0, done.stderr
    names = zipfile.ZipFile(out).namelist()
    assert "take-home/token_bucket/token_bucket.py" in names
    assert not any("solutions" in n or "hidden" in n or "mutants" in n for n in names)


def test_bundle_refuses_a_folder_that_has_files(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine", encoding="utf-8")
    done = run_grader(["bundle", "token_bucket", "--output", str(tmp_path)])
    assert done.code == 2 and "not an empty folder" in done.stderr
    assert (tmp_path / "keep.txt").read_text(encoding="utf-8") == "mine"


@pytest.mark.skipif(shutil.which("uv") is None, reason="the bundle's README command needs uv")
@pytest.mark.timeout(600)
def test_bundle_visible_tests_run_with_its_readme_command(tmp_path: Path) -> None:
    out = tmp_path / "take-home"
    assert run_grader(["bundle", "token_bucket", "--output", str(out)]).code == 0
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT")}
    done = subprocess.run(["uv", "run", "--quiet", "pytest", "-q"], cwd=out, env=env,
                          capture_output=True, text=True, timeout=600, check=False)
    summary = done.stdout.strip().splitlines()[-1] if done.stdout.strip() else done.stderr
    assert done.returncode == 1, f"exit {done.returncode}: {done.stdout[-2000:]}{done.stderr}"
    assert " failed" in summary and "error" not in summary, summary
    assert "NotImplementedError" in done.stdout


def test_every_command_a_bundle_shows_runs_inside_it(tmp_path: Path) -> None:
    """Every `uv run ...` the bundle's statements, tests, hints and README show runs there (it
    has no grader and no exercises/ folder), and no line names the grader as a command."""
    out = tmp_path / "take-home"
    assert run_grader(["bundle", "interval_union", "versioned_kv", "--output", str(out)]).code == 0
    texts = {p: p.read_text(encoding="utf-8") for p in out.rglob("*") if p.suffix in (".md", ".py")}
    assert not [p for p, t in texts.items() if re.search(r"`(uv run |python )grader\.py", t)]
    assert not [p for p, t in texts.items() if "exercises/" in t]
    commands = sorted({c for t in texts.values() for c in re.findall(r"`(uv run [^`]+)`", t)})
    assert commands, "the bundle shows no command"
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "UV_PROJECT")}
    for command in commands:
        argv = [word.replace("NAME", "interval_union") for word in command.split()]  # a template
        if "pytest" in argv:
            argv += ["-x", "-q"]  # against the stubs the first test fails: enough to prove it runs
        done = subprocess.run(argv, cwd=out, env=env, capture_output=True, text=True,
                              timeout=600, check=False)
        assert done.returncode in (0, 1), f"{command}: exit {done.returncode}: {done.stderr[-800:]}"


def test_hints_come_one_more_each_call(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv(state.ENV, str(tmp_path / "state.json"))
    from io import StringIO

    from grading import catalog
    from grading.hints import hint

    shown = []
    for _ in range(6):
        out = StringIO()
        hint(catalog.find("token_bucket"), out)
        shown.append(out.getvalue().splitlines()[0])
    assert shown[:4] == [f"hint {i} of 4 for token_bucket" for i in range(1, 5)]
    assert shown[4:] == ["hint 4 of 4 for token_bucket"] * 2


def test_a_stack_graded_in_parallel_gives_one_csv_row_each(tmp_path: Path) -> None:
    folder = tmp_path / "returned"
    folder.mkdir()
    reference = (ROOT / "solutions" / "token_bucket.py").read_text(encoding="utf-8")
    (folder / "alice.py").write_text(reference, encoding="utf-8")
    (folder / "bob.py").write_text(reference.replace("self.tokens -= tokens",
                                                     "self.tokens -= 2 * tokens"), encoding="utf-8")
    (folder / "carol.py").write_text("def broken(:\n", encoding="utf-8")
    done = run_grader(["token_bucket", "--submission", str(folder), "--jobs", "2", "--no-mypy",
                       "--format", "csv", "--check", "test_refused_request_consumes_nothing",
                       "--check", "test_an_allowed_request_deducts_its_tokens"])
    assert done.code == 1, done.stderr
    rows = list(csv.DictReader(done.stdout.splitlines()))
    scores = {Path(r["submission"]).name: (r["score"], r["max_score"]) for r in rows}
    assert scores == {"alice.py": ("4", "4"), "bob.py": ("0", "4"), "carol.py": ("0", "4")}


def test_watch_reports_what_changed_between_runs() -> None:
    from grading.changes import since_last as changes
    from grading.results import Check, Grade, Result

    check = Check("hidden::test_x", "The x rule.", "hidden", "correctness", 2.0, 10.0)
    before = Grade("e", "s.py", [Result(check, "failed", "boom")], 1.0)
    after = Grade("e", "s.py", [Result(check, "passed")], 1.0)
    assert changes(None, after) == []
    assert changes(before, after) == ["since the last run: score 0 -> 2",
                                      "  now passing: The x rule."]
    assert changes(after, before)[1] == "  now failing: The x rule."
