"""Submissions that attack the grader. For each: the run ends within its limits, the report is
sane, every affected check is failed with a reason, no point is awarded that the code did not
earn, the grader prints no traceback of its own, and no process is left behind.

Each attack is the token_bucket reference with one injection, graded on three checks (worth 6
points): `available()` is called by the first and last, `try_acquire(2.5)` only by the middle one.
All attacks are graded two at a time when the module is first used.
"""

from __future__ import annotations

import re
import socket
import tempfile
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from grading import contract, isolation
from tests.helpers import ROOT, Completed, run_grader

pytestmark = pytest.mark.linux_only("finds leftover processes in /proc; the attacks assume "
                                    "Linux's limits")

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
# The three checks take milliseconds on the reference. Each second of this limit is a second of
# CPU for every attack that spins in a call (three of them until the watchdog's grace is out, 5 s
# after it): 2 s proves the limit as well as 5, and the suite's load is far from it.
_TIMEOUT = 2.0
# An import that never returns holds a core until the wall limit: 5 s proves the limit as well
# as 30, for a sixth of the CPU.
_WALL_OF = {"hang_at_import": 5.0}
# Starting 256 processes, each exec'ing /bin/sleep, takes well under a second on an idle machine
# but several on a loaded one: the fork storm's check gets the room to reach the process limit.
_TIMEOUT_OF = {"fork_storm": 20.0}


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


def _ancestors(action: str, serving: bool = False) -> str:
    """Code that runs `action` on every ancestor `pid` of the child (with `serving`: only on the
    fork server and the process watching the child), ignoring refusals."""
    test = "b'--serve' in open(f'/proc/{pid}/cmdline', 'rb').read()" if serving else "True"
    return ("import os, signal\n"
            "pid = os.getppid()\n"
            "while pid > 1:\n"
            "    with open(f'/proc/{pid}/stat') as f:\n"
            "        parent = int(f.read().rsplit(')', 1)[1].split()[1])\n"
            "    try:\n"
            f"        if {test}:\n"
            f"            {action}\n"
            "    except OSError:\n"
            "        pass\n"
            "    pid = parent\n")


_UNSTOPPABLE = "import signal\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\nwhile True:\n    pass"
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
    "sigalrm_ignored": _inject(_IN_MIDDLE, _UNSTOPPABLE),
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
    "overwrites_test_files": _forge("import glob\n"
                                    "for f in glob.glob('test_*.py'):\n"
                                    "    open(f, 'w').write('def test_a_new_bucket_is_full():\\n"
                                    "    pass\\n')"),
    "writes_a_conftest": _forge("open('conftest.py', 'w').write('import _pytest.python\\n"
                                "_pytest.python.Function.runtest = lambda self: None\\n')"),
    "patches_pytest": _forge("import _pytest.python\n"
                             "_pytest.python.Function.runtest = lambda self: None"),
    # Every test file it can find (here, the parents, hidden/), each test's body made `pass`
    # while its name, docstring and marks stay.
    "forges_every_test_file": _forge(
        "import ast, pathlib\n"
        "here = pathlib.Path.cwd()\n"
        "for folder in [here, here / 'hidden', *here.parents]:\n"
        "    for path in [*folder.glob('test_*.py'), *folder.glob('conftest.py')]:\n"
        "        try:\n"
        "            tree = ast.parse(path.read_text())\n"
        "            for node in ast.walk(tree):\n"
        "                if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and "
        "node.name.startswith('test_'):\n"
        "                    doc = ast.get_docstring(node)\n"
        "                    node.body = ([ast.Expr(ast.Constant(doc))] if doc else []) + "
        "[ast.Pass()]\n"
        "            path.write_text(ast.unparse(tree))\n"
        "        except (OSError, SyntaxError):\n"
        "            pass"),
    # pytest's outcome machinery replaced at import: failures swallowed, reports forced to pass.
    "patches_pytest_internals": _forge(
        "import pytest, _pytest.outcomes, _pytest.reports, _pytest.runner\n"
        "pytest.fail = _pytest.outcomes.fail = lambda *a, **k: None\n"
        "_from_call = _pytest.runner.CallInfo.from_call.__func__\n"
        "def _quiet(func):\n"
        "    def run():\n"
        "        try:\n"
        "            return func()\n"
        "        except Exception:\n"
        "            return None\n"
        "    return run\n"
        "_pytest.runner.CallInfo.from_call = classmethod(\n"
        "    lambda cls, func, when, reraise=None: _from_call(cls, _quiet(func), when, reraise))\n"
        "_init = _pytest.reports.TestReport.__init__\n"
        "def _passing(self, *a, **k):\n"
        "    _init(self, *a, **k)\n"
        "    self.outcome, self.longrepr = 'passed', None\n"
        "_pytest.reports.TestReport.__init__ = _passing"),
    # Processes started in a loop, up to 5,000 (the bound keeps this test from harming the
    # machine): the run's process limit must stop it first. The message carries the count.
    "fork_storm": _inject(_IN_MIDDLE, "import os\n"
                                      "started = 0\n"
                                      "try:\n"
                                      "    while started < 5000:\n"
                                      "        os.posix_spawn('/bin/sleep', ['sleep', '120'], "
                                      "os.environ)\n"
                                      "        started += 1\n"
                                      "except OSError:\n"
                                      "    pass\n"
                                      "raise RuntimeError(f'started {started} processes')"),
    # Under bubblewrap: the reference on disk, found through a grader process's working
    # directory or by a search, re-exported as the answer.
    "finds_the_reference": _forge(
        "import os, pathlib\n"
        "_found = None\n"
        "_places = [pathlib.Path(f'/proc/{p}/cwd') for p in os.listdir('/proc') if p.isdigit()]\n"
        f"_places += [pathlib.Path({str(ROOT)!r}), pathlib.Path.home(), pathlib.Path('/work')]\n"
        "for _place in _places:\n"
        "    try:\n"
        "        _hits = [_place / 'solutions' / 'token_bucket.py',\n"
        "                 *_place.glob('*/solutions/token_bucket.py')]\n"
        "        _found = next((h for h in _hits if h.is_file()), None)\n"
        "    except OSError:\n"
        "        continue\n"
        "    if _found:\n"
        "        break\n"
        "if _found:\n"
        "    exec(compile(_found.read_text(), 'token_bucket.py', 'exec'), globals())"),
    # Under bubblewrap: the grading plugin rewritten to pass every check, then a crash in the
    # first check, so that the grader starts a new child for the others, which loads the plugin.
    "rewrites_the_grading_plugin": _STUB.replace(_IMPORT, "import os, sys\n"
        f"_path = getattr(sys.modules.get({contract.PLUGIN_MODULE!r}), '__file__', '')\n"
        "try:\n"
        "    _text = open(_path).read()\n"
        "    _forged = '# forged' in _text\n"
        "    if not _forged:\n"
        "        open(_path, 'w').write(_text + '\\n# forged\\ndef _outcome(item):\\n'\n"
        "                               '    return \"passed\", \"\", \"\"\\n')\n"
        "except OSError:\n"
        "    _forged = False\n" + _IMPORT, 1).replace(
        "        raise NotImplementedError(\"TokenBucket.__init__\")",
        "        if not _forged:\n            os._exit(3)\n"
        "        raise NotImplementedError(\"TokenBucket.__init__\")", 1),
    # Under bubblewrap: files planted in the repository and the home directory.
    "writes_outside_its_folder": _inject(_IMPORT, "import pathlib\n"
                                         f"for folder in ({str(ROOT)!r}, {str(Path.home())!r}):\n"
                                         "    try:\n"
                                         "        (pathlib.Path(folder) / 'planted-by-a-"
                                         "submission').write_text('x')\n"
                                         "    except OSError:\n"
                                         "        pass"),
    "escapes_into_a_new_session": _inject(_IMPORT, "import subprocess\n"
                                          "subprocess.Popen(['sleep', '600'], "
                                          "start_new_session=True)"),
    "leaves_its_process_group": _inject(_IN_MIDDLE, _UNSTOPPABLE).replace(
        _IMPORT, _ancestors("os.setpgid(0, os.getpgid(pid))") + _IMPORT, 1),
    # The grader's fork server and the process watching this child run as the same user.
    "kills_the_fork_server": _inject(_IMPORT, _ancestors("os.kill(pid, signal.SIGKILL)",
                                                         serving=True)),
    "stops_the_fork_server": _inject(_IMPORT, _ancestors("os.kill(pid, signal.SIGSTOP)",
                                                         serving=True)),
}


@dataclass(frozen=True)
class Verdict:
    completed: Completed
    seconds: float
    grade: dict[str, Any]
    leftovers: list[str]
    grades: list[dict[str, Any]]

    def status(self, check: str) -> str:
        return str(next(c["status"] for c in self.grade["checks"] if c["id"].endswith(check)))


def _attack(name: str, source: str, *more: str, isolation: str = "auto") -> Verdict:
    """Grade the attack (then `more` submissions, in the same grader run) on three checks."""
    with tempfile.TemporaryDirectory(prefix="attack-") as tmp:
        paths = [Path(tmp) / f"{name}_{i}.py" if i else Path(tmp) / f"{name}.py"
                 for i in range(1 + len(more))]
        for path, text in zip(paths, [source, *more], strict=True):
            path.write_text(text, encoding="utf-8")
        started = time.monotonic()
        wall = _WALL_OF.get(name, _WALL)
        checks = [] if name in _EVERY_CHECK else _CHECKS
        done = run_grader(["token_bucket", "--no-mypy", "--format", "json", "--jobs", "1",
                           *(a for p in paths for a in ("--submission", str(p))),
                           "--timeout", str(_TIMEOUT_OF.get(name, _TIMEOUT)),
                           "--wall-limit", str(wall),
                           "--isolation", isolation, *checks],
                          timeout=(wall + 120) * len(paths), env={_MARK: f"{name}@{isolation}"})
        seconds = time.monotonic() - started
    lines = done.json_lines() if done.code in (0, 1) else []
    return Verdict(done, seconds, lines[0] if lines else {},
                   _processes_marked(f"{name}@{isolation}"), lines)


# Attacks graded on every check: forged test files pay off only once the visible tests, which
# import the submission first, have run; patched internals, on whichever checks they reach.
_EVERY_CHECK = {"forges_every_test_file", "patches_pytest_internals"}
_MARK = "ATTACK_UNDER_TEST"  # in the environment of the grader and of all it starts


def _processes_marked(name: str) -> list[str]:
    """Processes the grader of `name` started that are still running (their environment, as it
    was when they started, carries the mark; a forked child's is its fork server's)."""
    mark = f"{_MARK}={name}".encode()
    found = []
    for proc in Path("/proc").iterdir():
        try:
            if proc.name.isdigit() and mark in (proc / "environ").read_bytes().split(b"\0"):
                found.append(f"{proc.name}: {(proc / 'cmdline').read_bytes()!r}")
        except OSError:
            continue  # gone, or not ours
    return found


# Attacks on the fork server are followed, in the same grader run, by the reference.
_THEN_REFERENCE = {"kills_the_fork_server", "stops_the_fork_server"}
_POOL = ThreadPoolExecutor(max_workers=2)
_VERDICTS: dict[str, Future[Verdict]] = {}


# Attacks graded once more with --isolation none: the defences in the grader's own process
# hold without bubblewrap too.
_BOTH_MODES = {"forges_every_test_file", "patches_pytest_internals", "fork_storm"}
# Attacks that only bubblewrap stops: graded with --isolation bwrap, skipped where it cannot run.
_BWRAP_ONLY = {"finds_the_reference", "writes_outside_its_folder", "connects_to_the_host",
               "rewrites_the_grading_plugin"}
_BWRAP = isolation.bwrap_problem()


class _Listener:
    """A TCP listener on 127.0.0.1, outside any sandbox, that counts who reaches it."""

    def __init__(self) -> None:
        self.socket = socket.create_server(("127.0.0.1", 0))
        self.socket.settimeout(0.5)
        self.port = self.socket.getsockname()[1]
        self.reached = 0
        self.stop = threading.Event()
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.socket.accept()
            except OSError:
                continue
            self.reached += 1
            conn.close()


_LISTENER: list[_Listener] = []


def _connects(port: int) -> str:
    return _inject(_IMPORT, "import socket\ntry:\n"
                            f"    socket.create_connection(('127.0.0.1', {port}), timeout=2)\n"
                            "except OSError:\n    pass")


def start_background() -> None:
    """Called when these tests are selected: every attack starts at once, two at a time (most of
    their time is spent waiting out time limits, so they share the machine well)."""
    if not _LISTENER:
        _LISTENER.append(_Listener())
    attacks = {**ATTACKS, "connects_to_the_host": _connects(_LISTENER[0].port)}
    for attack, source in attacks.items():
        if attack in _BWRAP_ONLY and _BWRAP:
            continue
        more = [_REFERENCE] if attack in _THEN_REFERENCE else []
        mode = "bwrap" if attack in _BWRAP_ONLY else "auto"
        if attack not in _VERDICTS:
            _VERDICTS[attack] = _POOL.submit(_attack, attack, source, *more, isolation=mode)
        if attack in _BOTH_MODES and f"{attack}@none" not in _VERDICTS:
            _VERDICTS[f"{attack}@none"] = _POOL.submit(_attack, attack, source, *more,
                                                       isolation="none")


def verdict(name: str) -> Verdict:
    if name.split("@", maxsplit=1)[0] in _BWRAP_ONLY and _BWRAP:
        pytest.skip(f"needs bubblewrap: {_BWRAP}")
    start_background()
    return _VERDICTS[name].result()


_EVERY = sorted([*ATTACKS, "connects_to_the_host", *(f"{a}@none" for a in _BOTH_MODES)])


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", _EVERY)
def test_attack_never_breaks_the_grader(name: str) -> None:
    v = verdict(name)
    assert v.completed.code in (0, 1), f"exit {v.completed.code}: {v.completed.stderr[-2000:]}"
    assert "Traceback" not in v.completed.stderr, v.completed.stderr[-2000:]
    wall = _WALL_OF.get(name.split("@", maxsplit=1)[0], _WALL)
    # Each submission's run, as the grader timed it: the wall limit holds it, whatever the load
    # while the grader started (the process as a whole is held to wall + 120 s by run_grader).
    for graded in v.grades:
        assert graded["duration"] < wall + 10, (
            f"grading {graded['submission']} took {graded['duration']:.0f} s "
            f"(wall limit {wall:g} s; the whole grader {v.seconds:.0f} s)")
    assert not v.leftovers, f"processes left behind: {v.leftovers}"
    checks = v.grade["checks"]
    every = name.split("@", maxsplit=1)[0] in _EVERY_CHECK
    assert len(checks) == 3 or (every and len(checks) > 3), checks
    for check in checks:
        if check["status"] != "passed":
            assert check["message"], f"{check['id']} is {check['status']} with no reason"
    all_passed = all(c["status"] == "passed" for c in checks)
    assert v.completed.code == (0 if all_passed else 1)
    assert v.grade["score"] == sum(c["max_points"] for c in checks if c["status"] == "passed")


# Attacks at import time that earn nothing at all (the stub, or a module that exits).
_AT_IMPORT = {"os_exit_at_import", "sys_exit_at_import", "fake_success_lines",
              "deletes_test_files", "overwrites_test_files", "writes_a_conftest", "patches_pytest",
              "kills_the_fork_server", "forges_every_test_file", "patches_pytest_internals",
              "forges_every_test_file@none", "patches_pytest_internals@none",
              "finds_the_reference", "rewrites_the_grading_plugin"}
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
    "escapes_into_a_new_session": {_FIRST: {"passed"}, _MIDDLE: {"passed"}, _LAST: {"passed"}},
    # Its monitor is stopped, not killed: the results it reported stand, after a wait.
    "stops_the_fork_server": {_FIRST: {"passed"}, _MIDDLE: {"passed"}, _LAST: {"passed"}},
    "leaves_its_process_group": {_FIRST: {"passed"}, _MIDDLE: {"timeout"}, _LAST: {"passed"}},
    "recursion_bomb": {_FIRST: {"passed"}, _MIDDLE: _LOST, _LAST: {"passed"}},
    "fork_storm": {_FIRST: {"passed"}, _MIDDLE: {"failed"}, _LAST: {"passed"}},
    "fork_storm@none": {_FIRST: {"passed"}, _MIDDLE: {"failed"}, _LAST: {"passed"}},
    "writes_outside_its_folder": {_FIRST: {"passed"}, _MIDDLE: {"passed"}, _LAST: {"passed"}},
    "connects_to_the_host": {_FIRST: {"passed"}, _MIDDLE: {"passed"}, _LAST: {"passed"}},
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


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", sorted(_THEN_REFERENCE))
def test_a_broken_fork_server_costs_the_next_submission_nothing(name: str) -> None:
    v = verdict(name)
    assert len(v.grades) == 2, v.completed
    assert v.grades[1]["score"] == v.grades[1]["max_score"], v.grades[1]["checks"]


def test_every_attack_is_pinned() -> None:
    assert set(_EXPECTED) | _AT_IMPORT == set(_EVERY)


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("name", ["fork_storm", "fork_storm@none"])
def test_a_fork_storm_stops_at_the_process_limit(name: str) -> None:
    v = verdict(name)
    message = next(c["message"] for c in v.grade["checks"] if c["id"].endswith(_MIDDLE))
    found = re.search(r"started (\d+) processes", message)
    assert found, message
    assert int(found.group(1)) <= isolation.PROCESSES, message
    assert not v.leftovers


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_bubblewrap_keeps_the_submission_off_the_network() -> None:
    verdict("connects_to_the_host")
    assert _LISTENER[0].reached == 0, "a submission reached a listener on the host"


@pytest.mark.slow
@pytest.mark.timeout(900)
def test_bubblewrap_keeps_the_submission_out_of_the_repository_and_home() -> None:
    verdict("writes_outside_its_folder")
    planted = [p for p in (ROOT, Path.home()) if (p / "planted-by-a-submission").exists()]
    for folder in planted:
        (folder / "planted-by-a-submission").unlink()
    assert not planted, f"a submission wrote into {planted}"
