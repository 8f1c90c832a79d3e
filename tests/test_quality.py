"""The tree is `mypy --strict` and `ruff check` clean.

mypy runs in three passes because module names repeat across folders: the stubs with their
visible tests; the grader and the repository's tests; the references with the hidden checks
(which type-check against the references). Mutants are patches, not Python.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from grading import catalog
from tests.helpers import EXERCISES, ROOT


def _start(*args: str, path: Sequence[Path] = ()) -> subprocess.Popen[str]:
    env = {**os.environ, "MYPYPATH": os.pathsep.join(str(p) for p in path)} if path else None
    return subprocess.Popen([sys.executable, "-m", *args], cwd=ROOT, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, env=env)


def _finish(proc: subprocess.Popen[str]) -> tuple[int, str]:
    out, _ = proc.communicate(timeout=600)
    return proc.returncode, out


_JOBS: dict[str, subprocess.Popen[str]] = {}


def start_background() -> None:
    """Called when these tests are selected: the checks run beside the grading jobs."""
    if _JOBS:
        return
    stubs = [str(p.relative_to(ROOT)) for e in EXERCISES for p in (e.stub, e.visible_tests)]
    references = [str(e.solution.relative_to(ROOT)) for e in EXERCISES]
    hidden = sorted({str(p.relative_to(ROOT)) for e in EXERCISES for p in e.hidden_files})
    _JOBS["stubs"] = _start("mypy", "--strict", "--cache-dir", ".mypy_cache/stubs",
                            "exercises/conftest.py", *stubs)
    _JOBS["tree"] = _start("mypy", "--strict", "--cache-dir", ".mypy_cache/tree",
                           "--exclude", "grading/hidden", "grader.py", "grading", "tests",
                           "mutation")
    # The hidden checks import the submission and their folder's helpers module by plain name:
    # both resolve through MYPYPATH, the references standing in for the submission.
    _JOBS["hidden"] = _start("mypy", "--strict", "--explicit-package-bases", "--cache-dir",
                             ".mypy_cache/hidden", *references, *hidden,
                             path=[ROOT / "solutions", catalog.HIDDEN,
                                   *(e.hidden for e in EXERCISES)])
    _JOBS["ruff"] = _start("ruff", "check", ".")


def _result(name: str) -> tuple[int, str]:
    start_background()
    return _finish(_JOBS[name])


@pytest.mark.timeout(600)
def test_stubs_and_visible_tests_pass_mypy_strict() -> None:
    code, out = _result("stubs")
    assert code == 0, out


@pytest.mark.timeout(600)
def test_grader_and_repository_tests_pass_mypy_strict() -> None:
    code, out = _result("tree")
    assert code == 0, out


@pytest.mark.timeout(600)
def test_references_and_hidden_checks_pass_mypy_strict() -> None:
    code, out = _result("hidden")
    assert code == 0, out


@pytest.mark.timeout(300)
def test_ruff_check_is_clean() -> None:
    code, out = _result("ruff")
    assert code == 0, out
