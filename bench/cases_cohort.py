"""`grader.py cohort` over a cohort of candidates x 2 exercises (wall time, submissions a
minute at --jobs 1 and --jobs 2), and the copy search's cost as the cohort grows.

Grading a cohort of 50 takes minutes, so `cohort` runs only when named
(`python -m bench cohort`); `--cohort-size N` sets its size (default 50)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.core import ROOT, Context, Row
from grading import catalog, isolation, similarity
from tests import cohort_helpers

EXERCISES = ("interval_union", "versioned_kv")
SIZE = 50
JOBS = (1, 2)
GROWTH = (10, 20, 40, 80)  # cohort sizes the copy search is timed at
MINUTE = 60.0


def cohort(ctx: Context, size: int = SIZE) -> list[Row]:
    rows = []
    where = isolation.describe().split(" (")[0]  # bubblewrap costs each child's start
    with tempfile.TemporaryDirectory(prefix="bench-cohort-") as tmp:
        returned = cohort_helpers.cohort(Path(tmp) / "returned", size, EXERCISES)
        graded = size * len(EXERCISES)
        for jobs in JOBS:
            ctx.progress(f"cohort: grading {size} candidates x {len(EXERCISES)} exercises, "
                         f"--jobs {jobs}")
            took = _wall(returned, Path(tmp) / f"report-{jobs}", jobs)
            rows.append(Row("cohort", f"{size} x {len(EXERCISES)}: wall time, --jobs {jobs}",
                            took, "s", "report", None,
                            f"{graded} submissions, no mypy, {where}"))
            rows.append(Row("cohort", f"submissions a minute, --jobs {jobs}",
                            round(graded * MINUTE / took, 1), "n", "report", None,
                            f"{graded} in {took:.0f} s"))
    rows += _copies(ctx)
    return rows


def _wall(returned: Path, output: Path, jobs: int) -> float:
    start = time.perf_counter()
    done = subprocess.run([sys.executable, "grader.py", "cohort", str(returned), "--output",
                           str(output), "--no-mypy", "--jobs", str(jobs)], cwd=ROOT,
                          env=dict(os.environ), capture_output=True, text=True, check=False)
    if done.returncode:
        raise RuntimeError(f"grader.py cohort exited {done.returncode}: {done.stderr[-500:]}")
    return time.perf_counter() - start


def _copies(ctx: Context) -> list[Row]:
    """The copy search of one exercise over cohorts of growing size: every pair and each
    against the reference, so its cost grows with the square of the cohort."""
    exercise = catalog.Exercise(EXERCISES[0])
    texts = cohort_helpers._answers(exercise.name)
    rows = []
    per_pair = 0.0
    for size in GROWTH:
        ctx.progress(f"cohort: the copy search over {size} submissions")
        sources = {f"c{i:04d}": texts[i % len(texts)] for i in range(size)}
        start = time.perf_counter()
        similarity.scores(exercise, sources)
        took = time.perf_counter() - start
        pairs = size * (size - 1) // 2 + size
        per_pair = took / pairs
        rows.append(Row("cohort", f"copy search, {size} submissions ({pairs} pairs)", took,
                        "s", "report", None, f"{1000 * per_pair:.2f} ms a pair"))
    # n (n + 1) / 2 pairs (with the reference) at the last run's cost a pair: a minute at n.
    minute = int((2 * MINUTE / per_pair) ** 0.5)
    rows.append(Row("cohort", "copy search: cohort size at a minute, per exercise", minute,
                    "n", "report", None, f"at {1000 * per_pair:.2f} ms a pair"))
    return rows
