"""An exercise's test modules, compiled once by the grader and handed to every child.

Rewriting and compiling job_api's eight test files (pytest's assertion rewriting included) costs
a child about 0.15 s, in every child of every grading. Here a process that runs no submission,
`python -I guard.py --compile FILE...`, does it once per version of the files, Python and
pytest, cached in `.grader/code/`; `child` lays the result beside the files in each work
directory, and the child runs a module's code only if it was compiled from the very bytes that
child read (see `guard.py`).

Standard library only (the grader's parent process imports this).
"""

from __future__ import annotations

import contextlib
import subprocess
import sys
import threading
from pathlib import Path

from grading import files, provenance
from grading.catalog import ROOT, Exercise

_CACHE = ROOT / ".grader" / "code"
_GUARD = Path(__file__).with_name("guard.py")
_LIMIT = 60.0  # seconds for compiling an exercise's test modules

_done: dict[str, bytes] = {}
_locks: dict[str, threading.Lock] = {}  # one per exercise: others need not wait for it
_locks_lock = threading.Lock()


def compiled(exercise: Exercise) -> bytes:
    """The exercise's test modules compiled as each child would compile them, marshalled; b""
    when they cannot be had, and each child compiles its own."""
    tests = [p for p in (exercise.visible_tests, *exercise.hidden_files) if p.suffix == ".py"]
    try:
        pytest_version = provenance.versions().get("pytest", "")
        digest = files.digest(exercise.grading_files, salt=f"{sys.version}|{pytest_version}")
    except OSError:
        return b""
    cache = _CACHE / f"{exercise.name}-{digest[:16]}.marshal"
    with _locks_lock:
        lock = _locks.setdefault(exercise.name, threading.Lock())
    with lock:
        if cache.name not in _done:
            try:
                _done[cache.name] = cache.read_bytes()
            except OSError:
                _done[cache.name] = _compile(exercise.name, tests, cache)
        return _done[cache.name]


def _compile(name: str, tests: list[Path], cache: Path) -> bytes:
    try:
        done = subprocess.run([sys.executable, "-I", str(_GUARD), "--compile", *map(str, tests)],
                              stdin=subprocess.DEVNULL, capture_output=True, check=True,
                              timeout=_LIMIT)
    except (OSError, subprocess.SubprocessError):
        return b""
    with contextlib.suppress(OSError):
        files.write_atomic(cache, done.stdout, stale=f"{name}-*.marshal")
    return done.stdout
