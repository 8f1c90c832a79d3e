"""The unscored `mypy --strict` line of a report, run beside the grading.

The submission is copied to a folder of its own and checked there, with a cache shared by
every grading of this checkout.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

from grading import catalog

_MYPY_LIMIT = 180.0  # seconds; a cold cache over fastapi's stubs takes a while


def start(exercise: catalog.Exercise, path: Path, tmp: Path) -> subprocess.Popen[str]:
    """mypy started on a copy of `path` in `tmp` (a folder the caller removes)."""
    target = tmp / f"{exercise.name}.py"
    shutil.copyfile(path, target)
    cache = catalog.ROOT / ".grader" / "mypy-cache"
    return subprocess.Popen(
        [sys.executable, "-m", "mypy", "--strict", "--no-color-output", "--no-error-summary",
         "--cache-dir", str(cache), target.name],
        cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)


def stop(proc: subprocess.Popen[str] | None) -> None:
    """Kill mypy, if it runs, without waiting for its line."""
    if proc is not None:
        proc.kill()
        proc.wait()


def finish(proc: subprocess.Popen[str]) -> str:
    """The report's line: "clean", the count and the first error, or why there is none."""
    try:
        out, _ = proc.communicate(timeout=_MYPY_LIMIT)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return f"did not finish within {_MYPY_LIMIT:g} s"
    errors = [line for line in out.splitlines() if ": error:" in line]
    if proc.returncode == 0:
        return "clean"
    if not errors:
        return f"mypy failed: {out.strip().splitlines()[-1] if out.strip() else proc.returncode}"
    plural = "s" if len(errors) > 1 else ""
    return f"{len(errors)} error{plural}, first: {errors[0]}"
