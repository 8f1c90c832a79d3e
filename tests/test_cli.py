"""The grader as a user drives it: usage errors, formats, the wall limit, a syntax error, a
stack of submissions. (Submissions that attack the grader are in test_hostile.py.)

Submissions are made here from the token_bucket reference with one change each, and graded on a
few checks so the suite stays fast.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from grading import (
    processes,
    sandbox,
)
from tests.helpers import (
    EXERCISES,
    ROOT,
    checks_of,
    edited_reference,
    run_grader,
)

_REFERENCE = (ROOT / "solutions" / "token_bucket.py").read_text(encoding="utf-8")
# Three checks: the first and last call available(), the middle one calls try_acquire(2.5).
_CHECKS = ["--check", "test_a_new_bucket_is_full",
           "--check", "test_an_allowed_request_deducts_its_tokens",
           "--check", "test_retry_after_counts_what_is_available"]



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
    (["list", "extra"], "unrecognized arguments: extra"),
    (["hint"], "required: NAME"),
    (["bundle", "token_bucket"], "required: --output"),
    (["grade"], "required: NAME"),
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


def test_text_report_ends_with_the_score_and_reports_mypy() -> None:
    done = run_grader(["token_bucket", "--reference", *_CHECKS])
    assert done.code == 0, done.stderr
    assert "mypy --strict (unscored): clean" in done.stdout
    assert done.stdout.rstrip().splitlines()[-1].startswith("score 6/6 (100%) · 3 passed")


# --- submissions that misbehave -----------------------------------------------------------------


def test_the_wall_limit_ends_a_run_of_hanging_checks(tmp_path: Path) -> None:
    hang = ("        import signal\n        signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
            "        while True:\n            pass\n")
    sub = edited_reference(tmp_path,
                           "        amount = _request(tokens, self._capacity)\n        with",
                           f"{hang}        amount = _request(tokens, self._capacity)\n        with")
    started = time.monotonic()
    code, grade = _grade_json("--submission", str(sub), "--wall-limit", "4", "--timeout", "30",
                              *_CHECKS)
    # Without the wall limit the three checks would run 3 x 30 s; the grader's own start-up
    # (collection, a fork server) takes seconds more on a loaded machine.
    assert time.monotonic() - started < 45, "the run outlived its wall limit"
    assert code == 1 and grade["score"] == 0
    assert set(_statuses(grade).values()) == {"timeout"}


def test_a_syntax_error_is_said_once_with_its_line(tmp_path: Path) -> None:
    sub = tmp_path / "submission.py"
    sub.write_text(_REFERENCE + "\ndef broken(:\n", encoding="utf-8")
    line = len(_REFERENCE.splitlines()) + 2
    code, grade = _grade_json("--submission", str(sub), *_CHECKS)
    assert code == 1 and grade["score"] == 0
    assert str(grade["reason"]).startswith(f"syntax error at line {line}"), grade["reason"]
    done = run_grader(["token_bucket", "--no-mypy", "--submission", str(sub), *_CHECKS])
    lines = done.stdout.splitlines()
    assert len(lines) == 3 and f"not graded: syntax error at line {line}" in lines[1], lines


@pytest.mark.parametrize(("content", "reason"), [
    (b"PK\x03\x04\x00\x00", "not a Python source file"),
    (b"from interval_union import merge\n", "missing names: Decision, KeyedLimiter, TokenBucket"),
])
def test_a_file_that_is_not_an_answer_is_refused_in_one_line(
        tmp_path: Path, content: bytes, reason: str) -> None:
    sub = tmp_path / "bob.py"
    sub.write_bytes(content)
    done = run_grader(["token_bucket", "--no-mypy", "--format", "csv", "--submission", str(sub)])
    assert done.code == 1 and reason in done.stdout.splitlines()[1], done.stdout


def test_grading_a_stack_gives_one_report_per_submission(tmp_path: Path) -> None:
    good = tmp_path / "alice.py"
    good.write_text(_REFERENCE, encoding="utf-8")
    bad = edited_reference(tmp_path, "self.tokens -= tokens", "self.tokens -= 2 * tokens", "bob.py")
    done = run_grader(["token_bucket", "--no-mypy", "--format", "json", "--submission",
                       str(good), "--submission", str(bad), *_CHECKS])
    assert done.code == 1
    scores = {Path(g["submission"]).name: g["score"] for g in done.json_lines()}
    assert scores["alice.py"] == 6 and scores["bob.py"] < 6, scores




# --- Ctrl-C ------------------------------------------------------------------------------------


@pytest.mark.linux_only("finds the grader's processes in /proc")
def test_ctrl_c_ends_the_grading_and_every_child_it_started(tmp_path: Path) -> None:
    """A submission whose every call hangs, graded on every check (so in two children at once);
    Ctrl-C part-way: the grader says so, exits 130 at once and leaves no process behind."""
    sub = edited_reference(tmp_path, "        amount = _request(tokens, self._capacity)\n",
                           "        while True:\n            time.sleep(0.05)\n")
    assert len(checks_of("token_bucket")) >= 2 * sandbox.SHARD_MIN
    key, value = "KATA_CTRL_C_TEST", str(os.getpid())
    mark = f"{key}={value}"
    proc = subprocess.Popen([sys.executable, str(ROOT / "grader.py"), "token_bucket",
                             "--no-mypy", "--submission", str(sub), "--timeout", "60"],
                            cwd=ROOT, env={**processes.environ(), key: value},
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not _two_children(seen := _marked(mark)) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _two_children(seen), f"two children never started: {seen}"
        time.sleep(1.5)  # both children well into checks that hang
        proc.send_signal(signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=10)
        except subprocess.TimeoutExpired:
            # Rare, and not reproduced on demand: what each process was doing says where.
            states = [f"{p} [{_state(p.split(':')[0])}]" for p in _marked(mark)]
            proc.kill()
            out, err = proc.communicate()
            pytest.fail("the grader was still running 10 s after Ctrl-C; its processes:\n  "
                        + "\n  ".join(states) + f"\nits stderr:\n{err}")
    finally:
        proc.kill()
    assert proc.returncode == 130, (out, err)
    assert err.strip().splitlines()[-1] == "grader: interrupted" and "Traceback" not in err
    deadline = time.monotonic() + 5
    while _marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _marked(mark), f"processes left behind: {_marked(mark)}"


def _state(pid: str) -> str:
    """A process's state letter and the kernel function it sleeps in, as /proc shows them."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return f"{stat[0]}, in {Path(f'/proc/{pid}/wchan').read_text() or '-'}"
    except (OSError, IndexError):
        return "gone"


def _two_children(processes: list[str]) -> bool:
    """Two grading children are running among `processes` (as `_marked` lists them): forks of
    the fork server (the server, a monitor and a child each), or children started afresh (which
    exec pytest). The grader, bubblewrap and the server alone are not enough: under load the
    grader may still be starting the server, or starting it again."""
    forks = sum("--serve" in p and "bwrap" not in p for p in processes)
    fresh = sum("pytest" in p and "grader.py" not in p and "bwrap" not in p for p in processes)
    return forks >= 5 or fresh >= 2


def _marked(mark: str) -> list[str]:
    """Running processes whose environment (as they started with it) holds `mark`."""
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and mark.encode() in (proc / "environ").read_bytes().split(
                    b"\0"):
                found.append(f"{proc.name}: {(proc / 'cmdline').read_bytes()!r}")
        except OSError:
            continue
    return found
