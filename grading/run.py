"""Grade submissions of exercises and print the report: the `grader.py NAME` flow."""

from __future__ import annotations

import argparse
import json
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from grading import (
    catalog,
    diagnose,
    forkserver,
    inputs,
    isolation,
    provenance,
    report,
    sandbox,
    signatures,
    state,
)
from grading.inputs import UsageError, select, submissions
from grading.results import Check, Grade, Result, num

_MYPY_LIMIT = 180.0  # seconds; a cold cache over fastapi's stubs takes a while


def grade_all(exercises: list[catalog.Exercise], args: argparse.Namespace) -> int:
    try:
        notice = isolation.choose(args.isolation)
    except isolation.IsolationError as exc:
        raise UsageError(str(exc)) from None
    limits = sandbox.Limits(wall=args.wall_limit, timeout=args.timeout or 10.0,
                            from_costs=args.timeout is None)
    forkserver.expect(exercises)  # the fork server loads only what these exercises import
    if args.output and not Path(args.output).resolve().parent.is_dir():
        raise UsageError(f"cannot write {args.output}: no such folder")
    before = _read_compare(Path(args.compare)) if args.compare else None
    tasks: list[tuple[catalog.Exercise, Path, list[Check]]] = []
    for exercise in exercises:
        paths = submissions(exercise, args)
        try:
            collected = sandbox.collect(exercise, limits, signatures.costs(exercise))
            checks = select(collected, args.check, exercise, visible_only=args.visible)
        except sandbox.GradingError as exc:
            raise UsageError(str(exc)) from None
        tasks.extend((exercise, path, checks) for path in paths)
    if notice:  # said once the command line is known to be good: a refusal stays one line
        print(notice, file=sys.stderr)
    if args.watch:
        if len(tasks) != 1:
            raise UsageError("--watch follows one submission of one exercise")
        return _watch(*tasks[0], limits, args)
    progress = report.ProgressLine()
    try:
        grades = _grade_tasks(tasks, limits, args, progress)
    finally:
        progress.clear()
    if not (args.check or args.visible or args.reference or args.mutant):
        for grade in grades:  # a whole grading of a candidate's file: `list` shows it
            state.record(grade)
    _write(grades, args)
    if before is not None:
        _compare(grades, Path(args.compare), before)
    return 0 if all(g.passed for g in grades) else 1


def _read_compare(old: Path) -> list[dict[str, Any]]:
    """The gradings saved in `old` (`--format json`), read before any grading starts."""
    try:
        lines = old.read_text(encoding="utf-8").splitlines()
        before = [json.loads(line) for line in lines if line.strip()]
    except (OSError, ValueError) as exc:
        raise UsageError(f"cannot read {old} as the grader's --format json output: {exc}") \
            from None
    if not all(isinstance(b, dict) for b in before):
        raise UsageError(f"cannot read {old} as the grader's --format json output: "
                         "a line is not a JSON object")
    return before


def _compare(grades: list[Grade], old: Path, before: list[dict[str, Any]]) -> None:
    """Each check whose outcome moved since the grading saved in `old` (`--format json`)."""
    out = sys.stderr
    for grade in grades:
        match = next((b for b in before if b.get("exercise") == grade.exercise
                      and (len(before) == 1 or b.get("submission") == grade.submission)), None)
        if match is None:
            out.write(f"compare: {old} has no grade of {grade.exercise} {grade.submission}\n")
            continue
        was = {c["id"]: c["status"] for c in match.get("checks", [])}
        now = {r.check.id: r.status for r in grade.results}
        moved = [f"  {cid}: {was.get(cid, 'absent')} -> {now.get(cid, 'absent')}"
                 for cid in sorted(was.keys() | now.keys()) if was.get(cid) != now.get(cid)]
        then = match.get("grader") or {}
        same = then.get("checks_sha256") == grade.provenance.get("checks_sha256")
        out.write(f"compare {grade.exercise} {grade.submission}: score {match.get('score')} -> "
                  f"{num(grade.score)}; {len(moved)} check(s) moved; "
                  f"{'the same checks' if same else 'the checks or the reference changed'} "
                  f"(commit {then.get('commit', '?')} -> {grade.provenance.get('commit')})\n")
        for line in moved:
            out.write(line + "\n")


def _grade_tasks(tasks: list[tuple[catalog.Exercise, Path, list[Check]]],
                 limits: sandbox.Limits, args: argparse.Namespace,
                 progress: report.ProgressLine) -> list[Grade]:
    if args.jobs == 1 or len(tasks) == 1:
        return [_grade_one(e, p, c, limits, args, progress) for e, p, c in tasks]
    done = [0]
    quiet = report.ProgressLine(live=False)

    def one(task: tuple[catalog.Exercise, Path, list[Check]]) -> Grade:
        grade = _grade_one(*task, limits, args, quiet)
        done[0] += 1
        progress(done[0], len(tasks), f"graded {grade.submission}")
        return grade

    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        return list(pool.map(one, tasks))


def _watch(exercise: catalog.Exercise, path: Path, checks: list[Check],
           limits: sandbox.Limits, args: argparse.Namespace) -> int:
    """Regrade whenever the submission is saved; show what changed since the last run."""
    previous: Grade | None = None
    while True:
        stamp = path.stat().st_mtime_ns
        progress = report.ProgressLine()
        try:
            grade = _grade_one(exercise, path, checks, limits, args, progress)
        finally:
            progress.clear()
        if sys.stdout.isatty():
            sys.stdout.write("\033[2J\033[H")
        report.render([grade], "text", sys.stdout, color=report.use_color(sys.stdout),
                      verbose=args.verbose, feedback=args.feedback)
        for line in report.changes(previous, grade):
            sys.stdout.write(line + "\n")
        sys.stdout.write(f"watching {_display(path)} (Ctrl-C to stop)\n")
        sys.stdout.flush()
        previous = grade
        while path.stat().st_mtime_ns == stamp:
            time.sleep(0.3)


def _grade_one(exercise: catalog.Exercise, path: Path, checks: list[Check],
               limits: sandbox.Limits, args: argparse.Namespace,
               progress: report.ProgressLine) -> Grade:
    started = time.monotonic()
    unfit = inputs.unfit(exercise, path)
    if unfit:  # said once, not once per check
        results = [Result(c, status="failed", message=unfit) for c in checks]
        return Grade(exercise.name, _display(path), results, time.monotonic() - started, "",
                     provenance.of(exercise), reason=unfit, refused=True)
    with tempfile.TemporaryDirectory(prefix="grader-mypy-") as tmp:
        mypy = None if args.no_mypy else _start_mypy(exercise, path, Path(tmp))
        results = sandbox.grade(
            exercise, path, checks, limits,
            lambda done, total, name: progress(done, total, f"{exercise.name}: {name}"))
        line = _finish_mypy(mypy) if mypy is not None else ""
    grade = Grade(exercise.name, _display(path), results, time.monotonic() - started, line,
                  provenance.of(exercise), reason=_one_failure(results, path, exercise))
    if not (args.check or args.visible):  # a signature speaks of a whole grading
        failed = [r.check.id for r in results if r.status != "passed"]
        passed = [r.check.id for r in results if r.status == "passed"]
        grade.diagnoses = [{"bug": d.bug, "summary": d.summary, "rule": d.rule}
                           for d in diagnose.diagnose(exercise, failed, passed)[:diagnose.SHOWN]]
    return grade


def _one_failure(results: list[Result], path: Path, exercise: catalog.Exercise) -> str:
    """The one reason every check failed, when they all failed with the same message (an
    import that fails, say), with the submission's own path in place of the grader's copy."""
    if len(results) < 2 or any(r.status == "passed" for r in results):
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


def _start_mypy(exercise: catalog.Exercise, path: Path, tmp: Path) -> subprocess.Popen[str]:
    target = tmp / f"{exercise.name}.py"
    shutil.copyfile(path, target)
    cache = catalog.ROOT / ".grader" / "mypy-cache"
    return subprocess.Popen(
        [sys.executable, "-m", "mypy", "--strict", "--no-color-output", "--no-error-summary",
         "--cache-dir", str(cache), target.name],
        cwd=tmp, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        start_new_session=True)


def _finish_mypy(proc: subprocess.Popen[str]) -> str:
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


def _write(grades: list[Grade], args: argparse.Namespace) -> None:
    if args.output:
        try:
            with open(args.output, "w", encoding="utf-8") as out:
                report.render(grades, args.format, out, verbose=args.verbose,
                              feedback=args.feedback)
        except OSError as exc:
            raise UsageError(f"cannot write {args.output}: {exc.strerror}") from None
        return
    report.render(grades, args.format, sys.stdout, color=report.use_color(sys.stdout),
                  verbose=args.verbose, feedback=args.feedback)
