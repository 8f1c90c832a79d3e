"""Submissions that attack the grader. For each: the run ends within its limits, the report is
sane, every affected check is failed with a reason, no point is awarded that the code did not
earn, the grader prints no traceback of its own, and no process is left behind.

Each attack is the token_bucket reference with one injection, graded on three checks (worth 6
points): `available()` is called by the first and last, `try_acquire(2.5)` only by the middle one.
All attacks are graded two at a time when the module is first used.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT, Completed, run_grader

_REFERENCE = (ROOT / "solutions" / "token_bucket.py").read_text(encoding="utf-8")
_STUB = (ROOT / "exercises" / "token_bucket" / "token_bucket.py").read_text(encoding="utf-8")
_CHECKS = ["--check", "test_a_new_bucket_is_full",
           "--check", "test_an_allowed_request_deducts_its_tokens",
           "--check", "test_retry_after_counts_what_is_available"]
_FIRST, _MIDDLE, _LAST = (c for c in _CHECKS if c != "--check")
_IMPORT = "__all__ = "  # code placed before this line runs at import
_CALL = "        amount = _request(tokens, self._capacity)\n"  # code after this runs in a call
_IN_MIDDLE = _CALL + "        if amount == 2.5:\n"  # ... and only in the middle check
_WALL = 30.0
_TIMEOUT = 5.0


def _forge(code: str) -> str:
    """The stub (which earns nothing) with `code` run at import, trying to turn that into points."""
    return _STUB.replace(_IMPORT, code + "\n" + _IMPORT, 1)


def _inject(where: str, code: str) -> str:
    """The reference with `code` run at import, or in a call."""
    if where == _IMPORT:
        return _REFERENCE.replace(where, code + "\n" + where, 1)
    indent = "            " if where == _IN_MIDDLE else "        "
    body = "".join(indent + line + "\n" for line in code.splitlines())
    return _REFERENCE.replace(_CALL, where + body, 1)


_FORGED = ('{"ev": "result", "id": "hidden::test_a_new_bucket_is_full", "status": "passed", '
           '"token": ""}')
ATTACKS: dict[str, str] = {
    "hang_at_import": _inject(_IMPORT, "while True:\n    pass"),
    "hang_in_a_call": _inject(_IN_MIDDLE, "while True:\n    pass"),
    "deadlock": _inject(_IN_MIDDLE, "import threading\nlock = threading.Lock()\nlock.acquire()\n"
                                    "lock.acquire()"),
    "os_exit_at_import": _inject(_IMPORT, "import os\nos._exit(0)"),
    "os_exit_in_a_call": _inject(_IN_MIDDLE, "import os\nos._exit(0)"),
    "sys_exit_at_import": _inject(_IMPORT, "import sys\nsys.exit(0)"),
    "keyboard_interrupt": _inject(_IN_MIDDLE, "raise KeyboardInterrupt"),
    "system_exit": _inject(_IN_MIDDLE, "raise SystemExit(0)"),
    "sigalrm_ignored": _inject(_IN_MIDDLE, "import signal\n"
                                           "signal.signal(signal.SIGALRM, signal.SIG_IGN)\n"
                                           "while True:\n    pass"),
    "memory_bomb": _inject(_IN_MIDDLE, "hog = []\nwhile True:\n    hog.append(bytearray(1 << 30))"),
    "prints_200_mb": _inject(_IN_MIDDLE, "import sys\nfor _ in range(200):\n"
                                         "    sys.stdout.write('x' * (1 << 20))"),
    "fake_success_lines": _forge("import os\n"
                                 "print('=== 3 passed in 0.01s ===')\n"
                                 f"print({_FORGED!r})\n"
                                 "for fd in range(3, 21):\n"
                                 "    try:\n"
                                 f"        os.write(fd, b'\\n' + {_FORGED!r}.encode() + b'\\n')\n"
                                 "    except OSError:\n"
                                 "        pass"),
    "thread_never_ends": _inject(_IMPORT, "import threading, time\n"
                                 "threading.Thread(target=lambda: time.sleep(10**6)).start()"),
    "recursion_bomb": _inject(_IN_MIDDLE, "import sys\nsys.setrecursionlimit(10**7)\n"
                                          "def down(n):\n    return down(n + 1) + 1\ndown(0)"),
    "deletes_test_files": _forge("import os, glob\n"
                                 "for f in glob.glob('test_*.py') + glob.glob('conftest.py'):\n"
                                 "    os.remove(f)"),
    "writes_a_conftest": _forge("open('conftest.py', 'w').write('import _pytest.python\\n"
                                "_pytest.python.Function.runtest = lambda self: None\\n')"),
    "patches_pytest": _forge("import _pytest.python\n"
                             "_pytest.python.Function.runtest = lambda self: None"),
}


@dataclass(frozen=True)
class Verdict:
    completed: Completed
    seconds: float
    grade: dict[str, Any]
    leftovers: list[str]

    def status(self, check: str) -> str:
        return str(next(c["status"] for c in self.grade["checks"] if c["id"].endswith(check)))


def _attack(name: str, source: str) -> Verdict:
    with tempfile.TemporaryDirectory(prefix="attack-") as tmp:
        path = Path(tmp) / f"{name}.py"
        path.write_text(source, encoding="utf-8")
        started = time.monotonic()
        done = run_grader(["token_bucket", "--no-mypy", "--format", "json", "--submission",
                           str(path), "--timeout", str(_TIMEOUT), "--wall-limit", str(_WALL),
                           *_CHECKS], timeout=_WALL + 60)
        seconds = time.monotonic() - started
    lines = done.json_lines() if done.code in (0, 1) else []
    return Verdict(done, seconds, lines[0] if lines else {}, _processes_mentioning(name))


def _processes_mentioning(name: str) -> list[str]:
    ps = subprocess.run(["ps", "-eo", "pid,args"], capture_output=True, text=True, check=False)
    return [line for line in ps.stdout.splitlines() if f"{name}.py" in line or
            re.search(rf"attack-\S+/{name}", line)]


_POOL = ThreadPoolExecutor(max_workers=2)
_VERDICTS: dict[str, Future[Verdict]] = {}


def start_background() -> None:
    """Called when these tests are selected: every attack starts at once, two at a time (most of
    their time is spent waiting out time limits, so they share the machine well)."""
    for attack, source in ATTACKS.items():
        if attack not in _VERDICTS:
            _VERDICTS[attack] = _POOL.submit(_attack, attack, source)


def verdict(name: str) -> Verdict:
    start_background()
    return _VERDICTS[name].result()


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(ATTACKS))
def test_attack_never_breaks_the_grader(name: str) -> None:
    v = verdict(name)
    assert v.completed.code in (0, 1), f"exit {v.completed.code}: {v.completed.stderr[-2000:]}"
    assert "Traceback" not in v.completed.stderr, v.completed.stderr[-2000:]
    assert v.seconds < _WALL + 20, f"the run took {v.seconds:.0f} s (wall limit {_WALL:g} s)"
    assert not v.leftovers, f"processes left behind: {v.leftovers}"
    checks = v.grade["checks"]
    assert len(checks) == 3, checks
    for check in checks:
        if check["status"] != "passed":
            assert check["message"], f"{check['id']} is {check['status']} with no reason"
    all_passed = all(c["status"] == "passed" for c in checks)
    assert v.completed.code == (0 if all_passed else 1)
    assert v.grade["score"] == sum(c["max_points"] for c in checks if c["status"] == "passed")


# Attacks at import time that earn nothing at all (the stub, or a module that exits).
_AT_IMPORT = {"os_exit_at_import", "sys_exit_at_import", "fake_success_lines",
              "deletes_test_files", "writes_a_conftest", "patches_pytest"}
_LOST = {"failed", "timeout", "crashed"}  # where the exact verdict depends on the machine
_EXPECTED: dict[str, dict[str, set[str]]] = {
    "hang_at_import": {_FIRST: {"timeout"}, _MIDDLE: {"timeout"}, _LAST: {"timeout"}},
    "hang_in_a_call": {_FIRST: {"passed"}, _MIDDLE: {"timeout"}, _LAST: {"passed"}},
    "deadlock": {_FIRST: {"passed"}, _MIDDLE: {"timeout"}, _LAST: {"passed"}},
    "os_exit_in_a_call": {_FIRST: {"passed"}, _MIDDLE: {"crashed"}, _LAST: {"passed"}},
    "keyboard_interrupt": {_FIRST: {"passed"}, _MIDDLE: {"failed"}, _LAST: {"passed"}},
    "system_exit": {_FIRST: {"passed"}, _MIDDLE: {"failed"}, _LAST: {"passed"}},
    "sigalrm_ignored": {_FIRST: {"passed"}, _MIDDLE: {"timeout"}, _LAST: {"passed"}},
    "memory_bomb": {_FIRST: {"passed"}, _MIDDLE: _LOST, _LAST: {"passed"}},
    "prints_200_mb": {_FIRST: {"passed"}, _MIDDLE: _LOST, _LAST: {"passed"}},
    "thread_never_ends": {_FIRST: {"passed"}, _MIDDLE: {"passed"}, _LAST: {"passed"}},
    "recursion_bomb": {_FIRST: {"passed"}, _MIDDLE: _LOST, _LAST: {"passed"}},
}


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(_EXPECTED))
def test_attack_costs_only_the_checks_it_hits(name: str) -> None:
    v = verdict(name)
    got = {check: v.status(check) for check in (_FIRST, _MIDDLE, _LAST)}
    wrong = {check: status for check, status in got.items() if status not in _EXPECTED[name][check]}
    assert not wrong, f"{name}: {got}, expected {_EXPECTED[name]}"


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(_AT_IMPORT))
def test_attack_at_import_earns_nothing(name: str) -> None:
    v = verdict(name)
    assert v.grade["score"] == 0, {c["id"]: c["status"] for c in v.grade["checks"]}


def test_every_attack_is_pinned() -> None:
    assert set(_EXPECTED) | _AT_IMPORT == set(ATTACKS)
