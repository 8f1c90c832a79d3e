"""The grader as a user drives it: usage errors, formats, the wall limit, a syntax error, a
stack of submissions. (Submissions that attack the grader are in test_hostile.py.)

Submissions are made here from the token_bucket reference with one change each, and graded on a
few checks so the suite stays fast.
"""

from __future__ import annotations

import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from grading import _boot, forkserver, isolation
from tests.helpers import EXERCISES, ROOT, caught_by, mutant_file, run_grader

_REFERENCE = (ROOT / "solutions" / "token_bucket.py").read_text(encoding="utf-8")
# Three checks: the first and last call available(), the middle one calls try_acquire(2.5).
_CHECKS = ["--check", "test_a_new_bucket_is_full",
           "--check", "test_an_allowed_request_deducts_its_tokens",
           "--check", "test_retry_after_counts_what_is_available"]


def _submission(tmp_path: Path, old: str, new: str, name: str = "submission.py") -> Path:
    assert old in _REFERENCE, f"the reference no longer contains {old!r}"
    path = tmp_path / name
    path.write_text(_REFERENCE.replace(old, new, 1), encoding="utf-8")
    return path


def _grade_json(*args: str, timeout: float = 120) -> tuple[int, dict[str, object]]:
    done = run_grader(["token_bucket", "--no-mypy", "--format", "json", *args], timeout=timeout)
    assert done.code in (0, 1), f"exit {done.code}: {done.stderr}"
    (grade,) = done.json_lines()
    return done.code, grade


def _statuses(grade: dict[str, object]) -> dict[str, str]:
    checks = grade["checks"]
    assert isinstance(checks, list)
    return {c["id"].split("::")[1]: c["status"] for c in checks}


# --- usage -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("args", "needle"), [
    (["token_bucke"], "did you mean token_bucket"),
    (["no_such_exercise"], "unknown exercise 'no_such_exercise'"),
    (["token_bucket", "--submission", "/nonexistent/x.py"], "no such file: /nonexistent/x.py"),
    (["token_bucket", "--format", "xml"], "invalid choice: 'xml'"),
    (["token_bucket", "--check", "test_nothing_like_this"], "no check 'test_nothing_like_this'"),
    (["token_bucket", "--wall-limit", "-3"], "positive number of seconds"),
    (["token_bucket", "--reference", "--submission", "x.py"], "not allowed with"),
    (["all", "--submission", "x.py"], "needs one exercise name"),
    (["list", "extra"], "unexpected argument 'extra'"),
    (["token_bucket", "--no-such-option"], "unrecognized arguments"),
])
def test_bad_usage_exits_2_with_one_clear_line(args: list[str], needle: str) -> None:
    done = run_grader(args)
    assert done.code == 2, f"exit {done.code} for {args}"
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1, f"stderr should be one line, got {done.stderr!r}"
    assert needle in lines[0], f"{lines[0]!r} does not say {needle!r}"
    assert "Traceback" not in done.stdout + done.stderr


def test_help_shows_real_examples() -> None:
    done = run_grader(["--help"])
    assert done.code == 0
    assert "python grader.py token_bucket --reference" in done.stdout
    assert "exit status" in done.stdout


def test_list_shows_every_exercise_with_its_difficulty() -> None:
    done = run_grader(["list"])
    assert done.code == 0, done.stderr
    for exercise in EXERCISES:
        assert exercise.name in done.stdout, f"list does not show {exercise.name}"
    assert "medium" in done.stdout


# --- formats -------------------------------------------------------------------------------------


def test_json_report_follows_its_schema() -> None:
    code, grade = _grade_json("--reference", *_CHECKS)
    assert code == 0
    assert set(grade) >= {"exercise", "submission", "score", "max_score", "duration", "checks"}
    assert grade["exercise"] == "token_bucket"
    assert grade["submission"] == "solutions/token_bucket.py"
    assert grade["score"] == grade["max_score"] == 6
    for check in grade["checks"]:  # type: ignore[attr-defined]
        assert set(check) >= {"id", "name", "visibility", "category", "points", "max_points",
                              "status", "message", "duration"}
        assert check["status"] == "passed"
        assert check["visibility"] == "hidden"
        assert check["id"].startswith("hidden::test_")


def test_gradescope_report_follows_the_autograder_schema() -> None:
    done = run_grader(["token_bucket", "--no-mypy", "--format", "gradescope", *_CHECKS])
    assert done.code == 1
    (results,) = done.json_lines()
    assert results["score"] == 0
    assert isinstance(results["execution_time"], float)
    assert len(results["tests"]) == 3
    for test in results["tests"]:
        assert set(test) >= {"name", "score", "max_score", "status", "output", "visibility"}
        assert test["status"] == "failed" and test["score"] == 0
        assert "NotImplementedError" in test["output"]


def test_junit_report_is_xml_with_one_case_per_check(tmp_path: Path) -> None:
    out = tmp_path / "report.xml"
    done = run_grader(["token_bucket", "--no-mypy", "--format", "junit", "--output", str(out),
                       *_CHECKS])
    assert done.code == 1 and done.stdout == ""
    suite = ET.parse(out).getroot().find("testsuite")
    assert suite is not None
    assert suite.get("tests") == "3" and suite.get("failures") == "3"
    assert len(suite.findall("testcase/failure")) == 3


def test_text_report_ends_with_the_score_and_reports_mypy() -> None:
    done = run_grader(["token_bucket", "--reference", *_CHECKS])
    assert done.code == 0, done.stderr
    assert "mypy --strict (unscored): clean" in done.stdout
    assert done.stdout.rstrip().splitlines()[-1].startswith("score 6/6 (100%) · 3 passed")


# --- submissions that misbehave -----------------------------------------------------------------


def test_the_wall_limit_ends_a_run_of_hanging_checks(tmp_path: Path) -> None:
    hang = ("        import signal\n        signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
            "        while True:\n            pass\n")
    sub = _submission(tmp_path, "        amount = _request(tokens, self._capacity)\n        with",
                      f"{hang}        amount = _request(tokens, self._capacity)\n        with")
    started = time.monotonic()
    code, grade = _grade_json("--submission", str(sub), "--wall-limit", "4", "--timeout", "30",
                              *_CHECKS)
    assert time.monotonic() - started < 4 + 15, "the run outlived its wall limit"
    assert code == 1 and grade["score"] == 0
    assert set(_statuses(grade).values()) == {"timeout"}


def test_a_syntax_error_fails_every_check_with_the_error(tmp_path: Path) -> None:
    sub = tmp_path / "submission.py"
    sub.write_text(_REFERENCE + "\ndef broken(:\n", encoding="utf-8")
    code, grade = _grade_json("--submission", str(sub), *_CHECKS)
    assert code == 1 and grade["score"] == 0
    messages = [c["message"] for c in grade["checks"]]  # type: ignore[attr-defined]
    assert all("SyntaxError" in m for m in messages), messages


def test_grading_a_stack_gives_one_report_per_submission(tmp_path: Path) -> None:
    good = tmp_path / "alice.py"
    good.write_text(_REFERENCE, encoding="utf-8")
    bad = _submission(tmp_path, "self.tokens -= tokens", "self.tokens -= 2 * tokens", "bob.py")
    done = run_grader(["token_bucket", "--no-mypy", "--format", "json", "--submission",
                       str(good), "--submission", str(bad), *_CHECKS])
    assert done.code == 1
    scores = {Path(g["submission"]).name: g["score"] for g in done.json_lines()}
    assert scores["alice.py"] == 6 and scores["bob.py"] < 6, scores


def test_children_started_without_the_fork_server_grade_the_same() -> None:
    interval_union = next(e for e in EXERCISES if e.name == "interval_union")
    patch = next(m for m in interval_union.mutants if m.stem == "closed_intervals")
    mutant = mutant_file(patch)
    stack = [a for path in (interval_union.solution, mutant) for a in ("--submission", str(path))]
    # Checks that catch the mutant (two with hypothesis's falsifying examples), and one it passes.
    checks = [*caught_by(patch), "test_merge_matches_a_unit_cell_count",
              "test_results_match_a_brute_force_count",
              "test_a_reversed_interval_raises_value_error"]
    outcomes = []
    for env in ({}, {"GRADER_NO_FORK_SERVER": "1"}):
        done = run_grader(["interval_union", "--no-mypy", "--format", "json", *stack,
                           *(a for c in checks for a in ("--check", c))], env=env)
        assert done.code == 1, done.stderr
        outcomes.append({(g["submission"], c["id"]): (c["status"], c["falsifying_example"])
                         for g in done.json_lines() for c in g["checks"]})
    forked, execed = outcomes
    assert forked == execed
    assert {status for status, _ in forked.values()} == {"passed", "failed"}
    assert any(example for _, example in forked.values()), "no falsifying example to compare"


def test_a_fork_server_loads_only_the_libraries_its_exercises_import() -> None:
    by_name = {e.name: e for e in EXERCISES}
    assert forkserver.libraries_of([by_name["token_bucket"]]) == frozenset()
    assert forkserver.libraries_of([by_name["micro_batcher"]]) == {"anyio", "trio"}
    web = forkserver.libraries_of([by_name["job_api"]])
    assert {"fastapi", "httpx", "schemathesis", "uvicorn"} <= web
    assert forkserver.libraries_of(EXERCISES) >= web | {"trio"}
    assert "schemathesis" not in _boot.preloads(frozenset({"anyio"}))
    assert "schemathesis.specs.openapi.schemas" in _boot.preloads(web)


@pytest.mark.skipif(isolation.mode() != "bwrap",
                    reason="only under bubblewrap can children not write their own bytecode")
def test_what_every_child_imports_is_compiled_outside_the_sandbox() -> None:
    forkserver.compile_preloads()
    missing = forkserver._uncompiled(_boot.preloads())
    assert not missing, f"no bytecode for {missing}: every run compiles them from source"
