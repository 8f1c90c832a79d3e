"""Grade what a `GradeRequest` asks for and write the report: the `grader.py grade` flow.

This module orchestrates: the submissions and checks come from `inputs` and `collect`, each
grading from `sandbox`, the mypy line from `typecheck`, diagnoses from `diagnose`, the report
from `report` and what moved from `changes`.
"""

from __future__ import annotations

import re
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from pathlib import Path
from typing import NamedTuple, TextIO

from grading import (
    catalog,
    changes,
    diagnose,
    forkserver,
    inputs,
    isolation,
    provenance,
    report,
    sandbox,
    signatures,
    state,
    typecheck,
)
from grading.channel import ProtocolError
from grading.collect import GradingError, collect
from grading.inputs import UsageError, select, submissions
from grading.limits import Limits
from grading.request import CHECK_LIMIT, GradeRequest
from grading.results import Check, Grade, Result


class Task(NamedTuple):
    """One submission of one exercise, and the checks it runs."""

    exercise: catalog.Exercise
    path: Path
    checks: list[Check]


def grade_all(request: GradeRequest) -> int:
    """Grade what `request` asks for, write the report; the exit status (0: every check of
    every submission passed)."""
    before = changes.read_saved(request.compare) if request.compare else None
    grades = grade_request(request)
    if grades is None:
        return 0
    _write(grades, request)
    if before is not None and request.compare is not None:  # once the report is safe
        changes.since_saved(grades, request.compare, before, sys.stderr)
    return 0 if all(g.passed for g in grades) else 1


def prepare(request: GradeRequest) -> tuple[str, Limits]:
    """The isolation notice (to be said once the command line is known to be good) and the
    limits of `request`; the fork server is told what it will grade. `UsageError` when the
    isolation asked for cannot be had."""
    try:
        notice = isolation.choose(request.isolation)
    except isolation.IsolationError as exc:
        raise UsageError(str(exc)) from None
    limits = Limits(wall=request.wall_limit, timeout=request.timeout or CHECK_LIMIT,
                    from_costs=request.timeout is None)
    forkserver.expect(list(request.exercises))  # the server loads what these exercises import
    return notice, limits


def grade_request(request: GradeRequest) -> list[Grade] | None:
    """The grades of what `request` asks for (None after `--watch`, which ends by Ctrl-C).
    Raises `UsageError` for what cannot be graded at all."""
    notice, limits = prepare(request)
    if request.output and not request.output.resolve().parent.is_dir():
        raise UsageError(f"cannot write {request.output}: no such folder")
    tasks = [task for exercise in request.exercises for task in _tasks(exercise, request, limits)]
    if notice:  # said once the command line is known to be good: a refusal stays one line
        print(notice, file=sys.stderr)
    if request.watch:
        if len(tasks) != 1:
            raise UsageError("--watch follows one submission of one exercise")
        _watch(tasks[0], limits, request)
        return None
    progress = report.ProgressLine()
    try:
        grades = _grade_tasks(tasks, limits, request, progress)
    finally:
        progress.clear()
    if request.candidates:
        for grade in grades:  # a whole grading of a candidate's file: `list` shows it
            if not grade.refused:
                state.record(grade)
    return grades


def _tasks(exercise: catalog.Exercise, request: GradeRequest, limits: Limits) -> list[Task]:
    paths = submissions(exercise, request)
    try:
        collected = collect(exercise, limits, signatures.costs(exercise))
        checks = select(collected, list(request.checks), exercise, visible_only=request.visible)
    except GradingError as exc:
        raise UsageError(str(exc)) from None
    return [Task(exercise, path, checks) for path in paths]


def _grade_tasks(tasks: list[Task], limits: Limits, request: GradeRequest,
                 progress: report.ProgressLine) -> list[Grade]:
    if request.jobs == 1 or len(tasks) == 1:
        return [grade_one(task, limits, request, progress) for task in tasks]
    done = [0]
    quiet = report.ProgressLine(live=False)

    def one(task: Task) -> Grade:
        grade = grade_one(task, limits, request, quiet)
        done[0] += 1
        progress(done[0], len(tasks), f"graded {grade.submission}")
        return grade

    with ThreadPoolExecutor(max_workers=request.jobs) as pool:
        return list(pool.map(one, tasks))


def _watch(task: Task, limits: Limits, request: GradeRequest) -> None:
    """Regrade whenever the submission is saved; show what changed since the last run."""
    previous: Grade | None = None
    while True:
        stamp = task.path.stat().st_mtime_ns
        progress = report.ProgressLine()
        try:
            grade = grade_one(task, limits, request, progress)
        finally:
            progress.clear()
        if sys.stdout.isatty():
            sys.stdout.write("\033[2J\033[H")
        report.render([grade], sys.stdout, replace(_style(request, sys.stdout), format="text"))
        for line in changes.since_last(previous, grade):
            sys.stdout.write(line + "\n")
        sys.stdout.write(f"watching {_display(task.path)} (Ctrl-C to stop)\n")
        sys.stdout.flush()
        previous = grade
        while task.path.stat().st_mtime_ns == stamp:
            time.sleep(0.3)


def grade_one(task: Task, limits: Limits, request: GradeRequest,
              progress: report.ProgressLine) -> Grade:
    """One submission graded, with its mypy line and, for a whole grading, its diagnoses."""
    exercise, path, checks = task
    started = time.monotonic()
    unfit = inputs.unfit(exercise, path)
    if unfit:  # said once, not once per check
        return _refused(task, unfit, started)
    with tempfile.TemporaryDirectory(prefix="grader-mypy-") as tmp:
        mypy = typecheck.start(exercise, path, Path(tmp)) if request.mypy else None
        try:
            results = sandbox.grade(
                exercise, path, checks, limits,
                lambda done, total, name: progress(done, total, f"{exercise.name}: {name}"))
        except ProtocolError as exc:  # the grader's fault: the grade says "not graded"
            typecheck.stop(mypy)
            return _refused(task, f"grader error, not graded: {exc}", started)
        except BaseException:  # Ctrl-C: nothing waits for mypy
            typecheck.stop(mypy)
            raise
        line = typecheck.finish(mypy) if mypy is not None else ""
    grade = Grade(exercise.name, _display(path), results, time.monotonic() - started, line,
                  provenance.of(exercise), reason=_one_failure(results, path, exercise))
    if request.every_check:  # a signature speaks of a whole grading
        failed = [r.check.id for r in results if r.status != "passed"]
        passed = [r.check.id for r in results if r.status == "passed"]
        grade.diagnoses = [{"bug": d.bug, "summary": d.summary, "rule": d.rule}
                           for d in diagnose.diagnose(exercise, failed, passed)[:diagnose.SHOWN]]
    return grade


def _refused(task: Task, reason: str, started: float) -> Grade:
    results = [Result(c, status="failed", message=reason) for c in task.checks]
    return Grade(task.exercise.name, _display(task.path), results, time.monotonic() - started,
                 "", provenance.of(task.exercise), reason=reason, refused=True)


def _one_failure(results: list[Result], path: Path, exercise: catalog.Exercise) -> str:
    """The one reason every check failed, when they all failed with the same message (an
    import that fails, say), with the submission's own path in place of the grader's copy."""
    if len(results) <= 1 or any(r.status == "passed" for r in results):
        return ""
    copy = re.compile(rf"\S*/work/{re.escape(exercise.name)}\.py")
    said = {" | ".join(line.strip() for line in copy.sub(str(path), r.message).splitlines()
                       if line.strip())
            for r in results}
    return said.pop() if len(said) == 1 and "" not in said else ""


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(catalog.ROOT))
    except ValueError:
        return str(path)


def _style(request: GradeRequest, out: TextIO) -> report.Style:
    return report.Style(request.format, request.feedback, request.verbose, report.use_color(out))


def _write(grades: list[Grade], request: GradeRequest) -> None:
    if request.output:
        try:
            with open(request.output, "w", encoding="utf-8") as out:
                report.render(grades, out, _style(request, out))
        except OSError as exc:
            raise UsageError(f"cannot write {request.output}: {exc.strerror}") from None
        return
    report.render(grades, sys.stdout, _style(request, sys.stdout))
