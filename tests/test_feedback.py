"""Feedback a candidate can act on, and what interviewers choose to show: driven through the real
CLI on small token_bucket submissions, each graded once and shared by the tests that read it."""

from __future__ import annotations

import ast
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from grading import catalog
from tests.helpers import ROOT, Completed, run_grader

_REFERENCE = (ROOT / "solutions" / "token_bucket.py").read_text(encoding="utf-8")
_HIDDEN = "test_refused_request_consumes_nothing"
_VISIBLE = "test_a_refused_request_consumes_nothing"
_HOOK = "def _request(tokens: object, capacity: float) -> float:\n"


def _with_helper(body: str) -> str:
    """The reference whose `_request` first calls `_helper`, defined with `body`."""
    helper = f"def _helper() -> None:\n{body}\n\n\n"
    assert _HOOK in _REFERENCE, "the reference's _request moved: update this test"
    return _REFERENCE.replace(_HOOK, helper + _HOOK + "    _helper()\n", 1)


_SUBMISSIONS = {
    "group": _with_helper("    raise ExceptionGroup('batch', [ValueError('leaf one'), "
                          "ExceptionGroup('inner', [KeyError('leaf two')])])"),
    "hang": _with_helper("    while True:\n        pass"),
    "refusal_empties": _REFERENCE.replace("if tokens <= self.tokens:\n            self.tokens -= "
                                          "tokens", "if tokens <= self.tokens:\n            self."
                                          "tokens -= tokens\n        else:\n            self."
                                          "tokens = 0.0", 1),
}


@cache
def _file(name: str) -> Path:
    folder = Path(os.environ.get("TMPDIR", "/tmp")) / f"feedback-{os.getpid()}" / name
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "token_bucket.py"
    path.write_text(_SUBMISSIONS[name], encoding="utf-8")
    return path


@cache
def _graded(name: str, *args: str) -> Completed:
    return run_grader(["token_bucket", "--no-mypy", "--submission", str(_file(name)),
                       "--timeout", "3", *args])


def _checks(done: Completed) -> dict[str, dict[str, object]]:
    return {str(c["id"]): c for g in done.json_lines() for c in g["checks"]}


def test_an_exception_group_is_reported_as_its_leaves_with_the_submission_line() -> None:
    done = _graded("group", "--check", _HIDDEN, "--format", "json")
    message = str(_checks(done)[f"hidden::{_HIDDEN}"]["message"])
    line = _SUBMISSIONS["group"].splitlines().index("def _helper() -> None:") + 2
    assert "ValueError: leaf one" in message and "KeyError: 'leaf two'" in message, message
    assert f"token_bucket.py:{line} in _helper" in message, message


@pytest.mark.parametrize("fmt", ["text", "json", "gradescope"])
def test_a_timeout_names_the_submission_line_where_it_was_stuck(fmt: str) -> None:
    # A short limit: the check spins a core until it is stopped.
    done = _graded("hang", "--check", _HIDDEN, "--format", fmt, "--timeout", "1")
    line = _SUBMISSIONS["hang"].splitlines().index("def _helper() -> None:") + 2
    assert f"token_bucket.py:{line} in _helper" in done.stdout, done.stdout[-2000:]


def test_a_failed_check_shows_the_id_that_check_accepts() -> None:
    done = _graded("refusal_empties", "--check", _HIDDEN)
    assert f"rerun: --check {_HIDDEN}" in done.stdout, done.stdout


@pytest.mark.parametrize(("pattern", "wanted"), [
    ("test_refused_request_cons", {f"hidden::{_HIDDEN}"}),  # a unique prefix
    ("test_*refused_request_consumes*", {f"hidden::{_HIDDEN}", f"visible::{_VISIBLE}"}),
])
def test_check_takes_a_unique_prefix_or_a_glob(pattern: str, wanted: set[str]) -> None:
    done = run_grader(["token_bucket", "--reference", "--no-mypy", "--format", "json",
                       "--check", pattern])
    assert set(_checks(done)) == wanted, done.stderr


def test_an_ambiguous_prefix_is_bad_usage_naming_the_candidates() -> None:
    done = run_grader(["token_bucket", "--reference", "--no-mypy", "--check", "test_refu"])
    assert done.code == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert "test_refused_request_consumes_nothing" in done.stderr


def test_visible_grades_only_the_visible_checks() -> None:
    done = _graded("refusal_empties", "--visible", "--format", "json")
    ids = set(_checks(done))
    assert ids and all(i.startswith("visible::") for i in ids), ids


def test_a_long_message_is_cut_in_the_middle_and_verbose_shows_it_whole() -> None:
    long = "x " * 100 + "WANT-THE-MIDDLE " + "x " * 100 + "KEEP-THE-END"
    source = _REFERENCE.replace(_HOOK, _HOOK + f"    raise ValueError({long!r})\n", 1)
    path = _file("refusal_empties").with_name("long_message.py")
    path.write_text(source, encoding="utf-8")
    short = run_grader(["token_bucket", "--no-mypy", "--submission", str(path), "--check",
                        _HIDDEN])
    whole = run_grader(["token_bucket", "--no-mypy", "--submission", str(path), "--check",
                        _HIDDEN, "--verbose"])
    assert "WANT-THE-MIDDLE" not in short.stdout and "--verbose shows all" in short.stdout
    assert "KEEP-THE-END" in short.stdout, short.stdout  # a message's end often says why
    assert "WANT-THE-MIDDLE" in whole.stdout


def test_a_known_bug_is_named_in_the_report() -> None:
    done = run_grader(["token_bucket", "--mutant", "refusal_consumes", "--no-mypy"])
    assert "This looks like a known bug:" in done.stdout, done.stdout[-1500:]


@pytest.mark.parametrize("level", ["names", "score"])
def test_feedback_levels_hold_back_hidden_messages(level: str) -> None:
    done = _graded("refusal_empties", "--feedback", level, "--format", "json")
    grade = done.json_lines()[0]
    hidden = [c for c in grade["checks"] if c["visibility"] == "hidden"]
    visible_failed = [c for c in grade["checks"]
                      if c["visibility"] == "visible" and c["status"] != "passed"]
    assert all(not c["message"] and not c["falsifying_example"] for c in hidden)
    assert visible_failed and all(c["message"] for c in visible_failed)
    assert not grade["diagnosis"]
    if level == "score":
        assert not hidden and grade["hidden_by_category"], grade


def test_gradescope_holds_hidden_checks_until_grades_are_published_at_score() -> None:
    done = _graded("refusal_empties", "--feedback", "score", "--format", "gradescope")
    tests = json.loads(done.stdout)["tests"]
    assert {t["visibility"] for t in tests if "hidden" in t["tags"]} == {"after_published"}


_FORMATS: dict[str, Callable[[str], dict[str, str]]] = {
    "json": lambda out: json.loads(out.splitlines()[0])["grader"],
    "gradescope": lambda out: json.loads(out)["extra_data"]["grader"],
    "junit": lambda out: {p.get("name", "").removeprefix("grader."): p.get("value", "")
                          for p in ET.fromstring(out).iter("property")
                          if p.get("name", "").startswith("grader.")},
    "csv": lambda out: dict(zip(*[row.split(",") for row in out.splitlines()[:2]],
                                strict=True)),
}


@pytest.mark.parametrize("fmt", sorted(_FORMATS))
def test_every_machine_format_says_which_checks_graded_it(fmt: str) -> None:
    done = _graded("refusal_empties", "--check", _HIDDEN, "--format", fmt)
    block = _FORMATS[fmt](done.stdout)
    digest = block.get("checks_sha256")
    from grading import provenance

    assert digest == provenance.checks_digest(catalog.find("token_bucket")), block
    assert block.get("commit") or block.get("grader_commit"), block


def test_compare_lists_the_checks_whose_outcome_moved(tmp_path: Path) -> None:
    old = tmp_path / "old.json"
    old.write_text(_graded("refusal_empties", "--check", _HIDDEN, "--check", _VISIBLE,
                           "--format", "json").stdout, encoding="utf-8")
    done = run_grader(["token_bucket", "--no-mypy", "--submission", str(_file("refusal_empties")),
                       "--check", _HIDDEN, "--check", _VISIBLE, "--compare", str(old)])
    assert "0 check(s) moved" in done.stderr and "the same checks" in done.stderr, done.stderr
    fixed = tmp_path / "token_bucket.py"
    fixed.write_text(_REFERENCE, encoding="utf-8")
    done = run_grader(["token_bucket", "--no-mypy", "--submission", str(fixed),
                       "--check", _HIDDEN, "--check", _VISIBLE, "--compare", str(old)])
    assert f"hidden::{_HIDDEN}: failed -> passed" in done.stderr, done.stderr


def test_list_shows_the_last_grade_of_any_submitted_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from grading import commands, state

    monkeypatch.setenv(state.ENV, str(tmp_path / "state.json"))
    fixed = tmp_path / "alice.py"
    fixed.write_text(_REFERENCE, encoding="utf-8")
    assert commands.main(["token_bucket", "--no-mypy", "--submission", str(fixed)]) == 0
    capsys.readouterr()
    commands.main(["list"])
    row = next(line for line in capsys.readouterr().out.splitlines()
               if line.startswith("token_bucket"))
    top = sum(c.points for c in _collected("token_bucket"))
    assert f"{top:g}/{top:g}" in row and "alice.py" in row, row


def _collected(name: str) -> list[Any]:
    from grading import collect, signatures

    exercise = catalog.find(name)
    return list(collect.collect(exercise, costs=signatures.costs(exercise)))


def test_every_exercise_has_hints() -> None:
    missing = [e.name for e in catalog.exercises() if not e.hints.is_file()]
    assert not missing, f"the README promises hints; these have no hints.md: {missing}"


def test_a_visible_test_file_copied_elsewhere_runs_without_marker_warnings(
        tmp_path: Path) -> None:
    for part in (ROOT / "exercises" / "token_bucket" / "test_token_bucket.py",
                 ROOT / "exercises" / "conftest.py", ROOT / "solutions" / "token_bucket.py"):
        shutil.copyfile(part, tmp_path / part.name)
    done = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                           "-W", "error::pytest.PytestUnknownMarkWarning"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout[-2000:]


def _top_imports(module: str) -> set[str]:
    tree = ast.parse((ROOT / "grading" / f"{module}.py").read_text(encoding="utf-8"))
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
    return found


def test_rendering_knows_no_process_and_cli_and_run_do_not_import_each_other() -> None:
    assert not any("sandbox" in name for name in _top_imports("report"))
    assert "grading.run" not in _top_imports("cli")
    assert "grading.run" not in _top_imports("commands")
    assert not any(name in ("grading.cli", "grading.cli.cli", "grading.commands")
                   or name.endswith((".cli", ".commands")) for name in _top_imports("run"))
