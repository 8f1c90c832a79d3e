"""The grader: a reference graded by `grader.py` vs a bare pytest run of the same test files, and
a stack of submissions with children forked from the fork server vs each started afresh."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.core import ROOT, SOLUTIONS, Context, Row, ratio_note
from grading import catalog, child

# Grading every reference twice (graded, bare) costs minutes on a loaded 2-core machine, so the
# default run samples one exercise; `--grade-all` grades them all.
SAMPLE = ("interval_union",)
ALL = ("billing", "interval_union", "job_api", "micro_batcher", "token_bucket", "versioned_kv",
       "xid_log_parser")

_CONFTEST = """\
from hypothesis import settings

import kata_contract

kata_contract.register_profile()
settings.load_profile(kata_contract.PROFILE)
"""
_INI = """\
[pytest]
timeout = 10
markers =
    points(n): points
    category(name): category
    hidden: hidden
"""


def _wall(argv: list[str], cwd: Path, env: dict[str, str], codes: tuple[int, ...] = (0,)) -> float:
    start = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, check=False)
    took = time.perf_counter() - start
    if done.returncode not in codes:
        tail = (done.stdout + done.stderr).decode(errors="replace").strip().splitlines()[-3:]
        raise RuntimeError(f"{' '.join(argv[1:4])} exited {done.returncode}: {' | '.join(tail)}")
    return took


def _bare_pytest(name: str, tmp: Path) -> float:
    """pytest alone on the reference and the visible and hidden tests, laid out as the grader
    lays them out, with the grader's hypothesis profile and hash seed: no sandbox, no channel."""
    work = tmp / name
    work.mkdir()
    child.lay_out(work, catalog.Exercise(name), SOLUTIONS / f"{name}.py")
    shutil.copyfile(catalog.GRADER / "contract.py", work / "kata_contract.py")
    (work / "conftest.py").write_text(_CONFTEST)
    (work / "pytest.ini").write_text(_INI)
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PYTEST_", "PYTHON", "HYPOTHESIS"))}
    env.update(PYTHONHASHSEED="0")
    return _wall([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-x"],
                 work, env)


def grader(ctx: Context, names: tuple[str, ...] = SAMPLE) -> list[Row]:
    rows = []
    with tempfile.TemporaryDirectory(prefix="bench-grader-") as tmp:
        for name in names:
            ctx.progress(f"grader: grading {name} (graded, then bare pytest)")
            graded = _wall([sys.executable, "grader.py", name, "--reference", "--no-mypy",
                            "--format", "json"], ROOT, dict(os.environ))
            bare = _bare_pytest(name, Path(tmp))
            rows.append(Row("grader", f"{name}: graded / bare pytest, same tests", graded / bare,
                            "x", "report", None, ratio_note(graded, bare, "graded", "bare")))
            rows.append(Row("grader", f"{name}: graded wall time", graded, "s", "<= 5 s", 5.0,
                            "the one absolute figure: the issue sets it in seconds"))
    rows.append(_stack(ctx, "interval_union"))
    return rows


# Visible checks that every mutant of interval_union reaches: the stack's time is start-up.
_STACK_CHECKS = ("test_example_1_merge_joins_touching_and_drops_empty_intervals",
                 "test_example_2_a_gpu_counts_once",
                 "test_example_3_touching_gpus_are_never_busy_together")


def _stack(ctx: Context, name: str) -> Row:
    """A stack of submissions (the exercise's mutants) on three quick checks each: per-child
    start-up with the fork server against a fresh `python -m pytest` per child."""
    count = len(catalog.Exercise(name).mutants)
    ctx.progress(f"grader: a stack of {count} {name} mutants, forked then started afresh")
    argv = [sys.executable, "grader.py", name, "--mutant", "all", "--no-mypy",
            "--format", "json", *(a for c in _STACK_CHECKS for a in ("--check", c))]
    forked = _wall(argv, ROOT, dict(os.environ), codes=(0, 1))
    fresh = _wall(argv, ROOT, {**os.environ, "GRADER_NO_FORK_SERVER": "1"}, codes=(0, 1))
    return Row("grader", f"{name}: stack of {count} x 3 checks, forked / fresh", forked / fresh,
               "x", "report", None, ratio_note(forked, fresh, "forked", "fresh"))
