"""The tree is `mypy --strict` and `ruff check` clean.

mypy runs in two passes because module names repeat across folders: the stubs with their visible
tests, then the grader, the references and the hidden tests (which type-check against the
references). Mutants are test data and are only linted.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import EXERCISES, ROOT


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=600, check=False)


@pytest.mark.timeout(600)
def test_stubs_and_visible_tests_pass_mypy_strict() -> None:
    files = [str(p.relative_to(ROOT)) for e in EXERCISES for p in (e.stub, e.visible_tests)]
    done = _run("mypy", "--strict", "exercises/conftest.py", *files)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.timeout(600)
def test_grader_references_and_hidden_tests_pass_mypy_strict() -> None:
    solutions = [str(e.solution.relative_to(ROOT)) for e in EXERCISES]
    hidden = [str(e.hidden_tests.relative_to(ROOT)) for e in EXERCISES]
    done = _run("mypy", "--strict", "--exclude", "grading/hidden|tests/mutants", "grader.py",
                "grading", "tests", *solutions, *hidden)
    assert done.returncode == 0, done.stdout + done.stderr


@pytest.mark.timeout(300)
def test_ruff_check_is_clean() -> None:
    done = _run("ruff", "check", ".")
    assert done.returncode == 0, done.stdout + done.stderr
