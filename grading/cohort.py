"""`grader.py cohort` and `grader.py merge`: a whole take-home graded per candidate.

One `cohort.json` holds everything a report is made from: the exercises and their checks, one
row per candidate, each grading's detail (the `--format json` object, with its candidate), the
graded files' text and the pairs flagged as copies. `merge` combines the `cohort.json` of
shards into the same object an unsharded run writes, so the CSV, JSON and HTML made from it are
the same too. Copies are looked for beside the grading (a thread of its own), and again over
the whole cohort when shards are merged.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from grading import catalog, cohort_files, report, run, signatures
from grading.collect import GradingError, collect
from grading.inputs import UsageError, select
from grading.limits import Limits
from grading.request import WALL_LIMIT, GradeRequest
from grading.results import Check, Grade
from grading.returned import Candidate, candidates, named_exercises


@dataclass(frozen=True)
class CohortRequest:
    """What one `grader.py cohort` command asks for."""

    returned: Path
    output: Path  # a folder: cohort.csv, cohort.json, details.jsonl, cohort.html
    exercises: tuple[str, ...] = ()  # none: those the candidates' files name
    checks: tuple[str, ...] = ()
    jobs: int = 1
    mypy: bool = True
    isolation: str = "auto"
    wall_limit: float = WALL_LIMIT
    timeout: float | None = None
    shard: tuple[int, int] | None = None  # (K, N): the K-th of N shards, 1 <= K <= N


def shard_of(found: list[Candidate], index: int, count: int) -> list[Candidate]:
    """The candidates of shard `index` of `count`: by name, every `count`-th from the
    `index`-th, so that the shards are disjoint, cover the cohort and differ in size by at
    most one."""
    ordered = sorted(found, key=lambda c: c.name)
    return ordered[index - 1::count]


def grade(request: CohortRequest, find: Callable[[str], catalog.Exercise]) -> int:
    """Grade the cohort `request` names and write its reports; 0 once they are written."""
    if not request.returned.is_dir():
        raise UsageError(f"no such folder: {request.returned}")
    cohort_files.check_output(request.output)
    with tempfile.TemporaryDirectory(prefix="grader-cohort-") as tmp:
        found = candidates(request.returned, Path(tmp))
        if not found:
            raise UsageError(f"nothing in {request.returned}: expected a folder or a .zip per "
                             "candidate")
        exercises = ([find(name) for name in request.exercises] if request.exercises
                     else named_exercises(found))
        if not exercises:
            raise UsageError(f"no exercise's file in {request.returned} (a NAME.py or a NAME/ "
                             "folder); name them with --exercises")
        size = len(found)
        if request.shard:
            found = shard_of(found, *request.shard)
        data = _grade(request, exercises, found)
    if request.shard:
        data["shard"] = {"index": request.shard[0], "count": request.shard[1], "cohort": size}
    written = cohort_files.write(data, request.output)
    _said(data, written)
    return 0


def _grade(request: CohortRequest, exercises: list[catalog.Exercise],
           found: list[Candidate]) -> dict[str, Any]:
    asked = GradeRequest(tuple(exercises), checks=request.checks, jobs=request.jobs,
                         mypy=request.mypy, isolation=request.isolation,
                         wall_limit=request.wall_limit, timeout=request.timeout)
    notice, limits = run.prepare(asked)
    checks = {e.name: _checks(e, asked.checks, limits) for e in exercises}
    if notice:
        print(notice, file=sys.stderr)
    files = {(c.name, e.name): c.file_for(e.name) for c in found for e in exercises}
    sources = {e.name: {c.name: _text(path) for c in found
                        if isinstance(path := files[c.name, e.name], Path)}
               for e in exercises}
    plan = cohort_files.Plan(found, exercises, files, checks, sources)
    with ThreadPoolExecutor(max_workers=1) as side:  # copies: beside the grading, not after it
        copies = side.submit(cohort_files.copies, exercises, sources)
        grades = _grade_all(plan, limits, asked)
        data = cohort_files.assemble(plan, grades)
        data["copies"] = copies.result()
    return data


def _checks(exercise: catalog.Exercise, wanted: tuple[str, ...], limits: Limits) -> list[Check]:
    """The checks of `exercise` that `wanted` names (every check when it names none): each
    name as `grade --check` takes it, a name that fits no check of this exercise left to the
    others."""
    try:
        collected = collect(exercise, limits, signatures.costs(exercise))
    except GradingError as exc:
        raise UsageError(str(exc)) from None
    if not wanted:
        return collected
    chosen: list[Check] = []
    for name in wanted:
        try:
            chosen += [c for c in select(collected, [name], exercise) if c not in chosen]
        except UsageError as exc:
            if "is a prefix of" in str(exc):
                raise
    if not chosen:
        raise UsageError(f"--check names no check of {exercise.name} "
                         f"({', '.join(wanted)}); leave it out with --exercises")
    return chosen


def _text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""


def _grade_all(plan: cohort_files.Plan, limits: Limits,
               asked: GradeRequest) -> dict[tuple[str, str], Grade]:
    from grading.run import Task, grade_one

    checks = plan.checks
    work = [(c, e, path) for c in plan.found for e in plan.exercises
            if isinstance(path := plan.files[c.name, e.name], Path)]
    progress = report.ProgressLine()
    quiet = report.ProgressLine(live=False)
    done = [0]

    def one(item: tuple[Candidate, catalog.Exercise, Path]) -> Grade:
        candidate, exercise, path = item
        graded = grade_one(Task(exercise, path, checks[exercise.name]), limits, asked, quiet)
        assert candidate.folder is not None
        graded = replace(graded, submission=f"{candidate.source}/"
                         f"{path.relative_to(candidate.folder).as_posix()}")
        done[0] += 1
        progress(done[0], len(work), f"graded {candidate.name}: {exercise.name}")
        return graded

    try:
        with ThreadPoolExecutor(max_workers=asked.jobs) as pool:
            grades = list(pool.map(one, work))
    finally:
        progress.clear()
    return {(c.name, e.name): g for (c, e, _), g in zip(work, grades, strict=True)}


def _said(data: dict[str, Any], written: list[Path]) -> None:
    rows = data["candidates"]
    missing = sum(1 for row in rows for entry in row["exercises"].values() if not entry["graded"])
    pairs = len(data["copies"]["pairs"])
    shard = data.get("shard")
    part = f" (shard {shard['index']}/{shard['count']})" if shard else ""
    print(f"cohort{part}: {len(rows)} candidates x {len(data['exercises'])} exercises, "
          f"{missing} not graded, {pairs} pairs flagged as copies; wrote "
          f"{', '.join(str(p) for p in written)}", file=sys.stderr)


def merge(reports: list[Path], output: Path) -> int:
    """Combine the `cohort.json` of shards into one cohort's reports; 0 once written."""
    cohort_files.check_output(output)
    parts = [cohort_files.read(path) for path in reports]
    data = cohort_files.combine(parts, reports)
    exercises = [catalog.Exercise(e["name"]) for e in data["exercises"]]
    data["copies"] = cohort_files.copies(exercises, data["sources"])
    written = cohort_files.write(data, output)
    _said(data, written)
    return 0
