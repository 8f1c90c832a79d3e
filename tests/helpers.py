"""Shared helpers for the repository's own tests: run the grader like a user does, and grade
many submissions at once (one more than there are cores) through the grader's own API."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from grading import catalog, collect, isolation, mutants, processes, sandbox, signatures
from grading.results import Check, Result

ROOT = catalog.ROOT
EXERCISES = catalog.exercises()
# The suite grades as `python grader.py` does by default: under bubblewrap where it works (CI
# installs it), so the isolated path is the one the suite proves; GRADER_ISOLATION=none proves
# the other (CI runs the suite both ways).
ISOLATION_NOTICE = isolation.choose(os.environ.get(isolation.ENV, "auto"))
EXERCISE_NAMES = [e.name for e in EXERCISES]


@dataclass(frozen=True)
class Completed:
    code: int
    stdout: str
    stderr: str

    def json_lines(self) -> list[dict[str, Any]]:
        return [json.loads(line) for line in self.stdout.splitlines() if line.strip()]


def run_grader(args: Sequence[str], *, timeout: float = 300, cwd: Path = ROOT,
               env: dict[str, str] | None = None) -> Completed:
    """`python grader.py ARGS` in a child process, as a user types it."""
    proc = subprocess.run([sys.executable, str(ROOT / "grader.py"), *args], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout,
                          env={**processes.environ(), **(env or {})}, check=False)
    return Completed(proc.returncode, proc.stdout, proc.stderr)


@cache
def edited_reference(tmp_path: Path, old: str, new: str, name: str = "submission.py",
                     exercise: str = "token_bucket") -> Path:
    """A submission: the reference of `exercise` with its first `old` replaced by `new`."""
    reference = (ROOT / "solutions" / f"{exercise}.py").read_text(encoding="utf-8")
    assert old in reference, f"the reference no longer contains {old!r}"
    path = tmp_path / name
    path.write_text(reference.replace(old, new, 1), encoding="utf-8")
    return path


def checks_of(name: str) -> tuple[Check, ...]:
    exercise = catalog.Exercise(name)
    return tuple(collect.collect(exercise, costs=signatures.costs(exercise)))


# Lines the session prints at its end (figures a reader of the run wants, such as rates).
SUMMARY: list[str] = []

# One grading more than there are cores: a grading that waits (out a check's time limit, for its
# child to start or to report) then leaves no core idle.
_POOL = ThreadPoolExecutor(max_workers=(os.cpu_count() or 1) + 1)
_JOBS: dict[tuple[str, str, tuple[str, ...], int], Future[list[Result]]] = {}
_MODULES: dict[Path, Path] = {}  # mutant patch -> the module it made this session
_MAKING = threading.Lock()


def grade(name: str, submission: Path, only: Sequence[str] = (),
          again: int = 0) -> list[Result]:
    """Grade `submission` (only the named checks, if any; a mutant's `.diff` is applied to the
    reference first); cached per session, so the same arguments grade once (`again` > 0 asks
    for a separate, later grading)."""
    prefetch(name, submission, only, again)
    return _JOBS[(name, str(submission), tuple(only), again)].result()


def prefetch(name: str, submission: Path, only: Sequence[str] = (), again: int = 0) -> None:
    """Start grading in the background so that a later `grade` call finds it done."""
    key = (name, str(submission), tuple(only), again)
    if key not in _JOBS:
        _JOBS[key] = _POOL.submit(_grade, name, submission, tuple(only))


def _grade(name: str, submission: Path, only: tuple[str, ...]) -> list[Result]:
    if submission.suffix == ".diff":  # a mutant: applied here, so a stale patch fails its test
        submission = _module_of(submission)
    checks = list(checks_of(name))
    if only:
        checks = [c for c in checks if c.id.split("::", 1)[1].split("[")[0] in only]
    return sandbox.grade(catalog.Exercise(name), submission, checks)


def _module_of(patch: Path) -> Path:
    """`mutant_file(patch)`, made once a session: every grading of a mutant grades the same
    module, each in a fresh child and work folder. A patch that does not apply is tried (and
    fails) again each time."""
    with _MAKING:
        if patch not in _MODULES:
            _MODULES[patch] = mutant_file(patch)
        return _MODULES[patch]


def mutant_file(patch: Path) -> Path:
    """The module a mutant patch makes of today's reference (see `grading.mutants`)."""
    return mutants.materialize(mutants.Mutant(patch.parent.name, patch.stem, patch))


def caught_by(patch: Path) -> list[str]:
    """The hidden checks a mutant's header says must catch it."""
    return mutants.Mutant(patch.parent.name, patch.stem, patch).caught_by


def describe(results: list[Result]) -> str:
    lines = []
    for r in results:
        first = r.message.splitlines()[0] if r.message else ""
        lines.append(f"  {r.status:8} {r.check.id}: {first}")
    return "\n".join(lines)


def cancel_pending() -> None:
    """Drop queued grading jobs (after -x or an interrupt); running ones finish."""
    _POOL.shutdown(wait=False, cancel_futures=True)
