"""`python grader.py ...`: the verbs carried out, and the process around them (re-running
under `uv run` when a dependency is missing, Ctrl-C). `cli` parses the command line.

This module and everything it imports at the top use the standard library only, so that
`python grader.py` can tell a bare interpreter what is missing (and re-run itself under
`uv run`) instead of failing with an import error.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import os
import shutil
import signal
import sys
import threading
from collections.abc import Sequence
from typing import TextIO

from grading import catalog, isolation
from grading.cli import find, parse, request
from grading.inputs import UsageError

# What the grader itself imports; the libraries an exercise's files import come on top (a
# Gradescope image installs only those of its exercise).
_REQUIRED = ("pytest", "hypothesis", "pytest_timeout", "psutil")
_REEXEC = "GRADER_UNDER_UV"
_INTERRUPT_GRACE = 3.0  # seconds Ctrl-C's orderly unwinding may take before the grader exits


def _interrupted(_signum: int, _frame: object) -> None:
    """Ctrl-C: unwind (the children are killed on the way out), and end the grader regardless
    once `_INTERRUPT_GRACE` seconds have passed: no wait on a child, a lock or a thread that is
    slow to notice can keep it running."""
    timer = threading.Timer(_INTERRUPT_GRACE, _exit_now)
    timer.daemon = True
    timer.start()
    raise KeyboardInterrupt


def _exit_now() -> None:
    from grading import forkserver, processes

    processes.kill_all()
    forkserver.kill_servers()
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write("grader: interrupted\n")
        sys.stderr.flush()
    os._exit(130)


def main(argv: Sequence[str] | None = None) -> int:
    args_list = list(sys.argv[1:] if argv is None else argv)
    if threading.current_thread() is threading.main_thread() and argv is None:
        signal.signal(signal.SIGINT, _interrupted)  # the command line only, not a test's call
    try:
        args = parse(args_list)
        missing = _missing(args)
        if missing:
            _rerun_under_uv(args_list, missing)
        return _dispatch(args)
    except UsageError as exc:
        print(f"grader: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("grader: interrupted", file=sys.stderr)
        return 130


def _missing(args: argparse.Namespace) -> list[str]:
    """The modules this command needs that this Python lacks: the grader's own, and for a
    grading the libraries its exercises' files import."""
    if args.verb in ("list", "hint"):
        return []
    needed = list(_REQUIRED)
    if args.verb in ("cohort", "merge"):
        needed += ["jinja2", "copydetect"]
    names = {e.name for e in catalog.exercises()}
    if args.verb == "grade" and (args.target == "all" or args.target in names):
        from grading import preload

        chosen = catalog.exercises() if args.target == "all" else [catalog.Exercise(args.target)]
        needed += sorted(preload.libraries_of(chosen))
    return [n for n in needed if importlib.util.find_spec(n) is None]


def _rerun_under_uv(argv: list[str], missing: list[str]) -> None:
    uv = shutil.which("uv")
    if uv is None or os.environ.get(_REEXEC):
        raise UsageError(
            f"missing dependencies ({', '.join(missing)}); install uv (pip install uv) and run "
            f"`uv run grader.py {' '.join(argv)}`")
    setup = "" if (catalog.ROOT / ".venv").is_dir() else " (the first run sets up .venv)"
    print(f"grader: dependencies not installed in this Python; running under `uv run`{setup}",
          file=sys.stderr)
    env = {**os.environ, _REEXEC: "1"}
    os.execve(uv, [uv, "run", "--project", str(catalog.ROOT), "python",
                   str(catalog.ROOT / "grader.py"), *argv], env)


def _dispatch(args: argparse.Namespace) -> int:
    if args.verb == "list":
        return _list(sys.stdout)
    if args.verb == "hint":
        from grading.hints import hint

        hint(find(args.name), sys.stdout, reset=args.reset)
        return 0
    if args.verb == "bundle":
        return _bundle(args)
    if args.verb in ("cohort", "merge"):
        return _cohort(args)
    from grading.run import grade_all

    return grade_all(request(args))


def _bundle(args: argparse.Namespace) -> int:
    from grading.bundle import BundleError, bundle, gradescope

    exercises = [find(name) for name in args.names]
    if args.gradescope and len(exercises) != 1:
        raise UsageError("a Gradescope autograder is for one exercise")
    try:
        if args.gradescope:
            gradescope(exercises[0], args.output, feedback=args.feedback)
        else:
            bundle(exercises, args.output)
    except BundleError as exc:
        raise UsageError(str(exc)) from None
    print(f"wrote {args.output}: {', '.join(e.name for e in exercises)}", file=sys.stderr)
    return 0


def _cohort(args: argparse.Namespace) -> int:
    from grading import cohort

    if args.verb == "merge":
        return cohort.merge(args.reports, args.output)
    return cohort.grade(cohort.CohortRequest(
        args.returned, args.output, exercises=tuple(args.exercises),
        checks=tuple(args.check or ()), jobs=args.jobs, mypy=not args.no_mypy,
        isolation=args.isolation, wall_limit=args.wall_limit, timeout=args.timeout,
        shard=args.shard), find)


def _list(out: TextIO) -> int:
    from grading.state import last_scores
    scores = last_scores()
    rows = [("exercise", "title", "level", "min", "your last score")]
    for e in catalog.exercises():
        minutes = str(e.minutes) if e.minutes else "?"
        rows.append((e.name, e.title, e.difficulty, minutes, scores.get(e.name, "-")))
    widths = [max(len(row[i]) for row in rows) for i in range(len(rows[0]))]
    for row in rows:
        out.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
        out.write("\n")
    out.write(f"\n{isolation.describe()}\n")
    out.write("grade one with `python grader.py NAME` (see --help)\n")
    return 0
