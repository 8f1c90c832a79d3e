"""A candidate's laptop, simulated on Linux: with `resource`, `fork` and `/proc` each made
unavailable in turn (`GRADER_WITHOUT`, see grading/hostos.py), the references still earn full
marks, the stub nothing, and the hostile cases that each fallback is for end within their bounds
and leave no process behind."""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

import pytest

from grading import hostos
from tests.helpers import Completed, run_grader
from tests.test_hostile import _CHECKS, _EXPECTED, _MIDDLE, ATTACKS, _processes_marked

pytestmark = pytest.mark.linux_only("simulates the other systems on Linux")

_MARK = "ATTACK_UNDER_TEST"
# Each absence, with the attacks its fallback stands in for.
_CASES = {
    "resource": ("memory_bomb", "hang_in_a_call", "sigalrm_ignored"),
    "fork": ("escapes_into_a_new_session", "leaves_its_process_group", "os_exit_in_a_call"),
    "proc": ("escapes_into_a_new_session", "leaves_its_process_group"),
}


def _grade(without: str, *args: str, mark: str = "") -> Completed:
    env = {hostos.ENV: without, "GRADER_ISOLATION": "none", **({_MARK: mark} if mark else {})}
    return run_grader(["token_bucket", "--no-mypy", "--format", "json", *args], env=env,
                      timeout=300)


@pytest.mark.slow
@pytest.mark.parametrize("without", hostos.FEATURES)
def test_the_reference_earns_full_marks_and_the_stub_nothing(without: str) -> None:
    reference = _grade(without, "--reference").json_lines()[0]
    assert reference["score"] == reference["max_score"], reference
    stub = _grade(without).json_lines()[0]
    assert stub["score"] == 0, stub


@pytest.mark.slow
@pytest.mark.parametrize(("without", "attack"),
                         [(w, a) for w, attacks in _CASES.items() for a in attacks])
def test_a_hostile_submission_is_stopped_by_the_fallback(without: str, attack: str) -> None:
    mark = f"{attack}@without-{without}"
    with tempfile.TemporaryDirectory(prefix="attack-") as tmp:
        path = Path(tmp) / f"{attack}.py"
        path.write_text(ATTACKS[attack], encoding="utf-8")
        started = time.monotonic()
        done = _grade(without, "--submission", str(path), "--timeout", "2", "--wall-limit", "30",
                      *_CHECKS, mark=mark)
        took = time.monotonic() - started
    lines = done.json_lines() if done.code in (0, 1) else []
    assert lines, f"the grader failed: {done.stderr[-800:]}"
    status = {c["id"].split("::", 1)[1]: c["status"] for c in lines[0]["checks"]}
    wanted = _EXPECTED[attack]
    wrong = {c: s for c, s in status.items() if s not in wanted[c]}
    assert not wrong, f"without {without}: {status}, expected {wanted}"
    assert status[_MIDDLE] != "passed" or wanted[_MIDDLE] == {"passed"}
    assert took < 60, f"without {without}, {attack} took {took:.0f} s to grade"
    deadline = time.monotonic() + 5
    while _processes_marked(mark) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not _processes_marked(mark), f"left behind: {_processes_marked(mark)}"
