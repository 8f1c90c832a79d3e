"""`python grader.py ...`: arguments and dispatch.

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
from pathlib import Path
from typing import NoReturn, TextIO

from grading import catalog, isolation
from grading.inputs import UsageError
from grading.results import FEEDBACK

# What the grader itself imports; the libraries an exercise's files import come on top (a
# Gradescope image installs only those of its exercise).
_REQUIRED = ("pytest", "hypothesis", "pytest_timeout", "psutil")
_REEXEC = "GRADER_UNDER_UV"

EPILOG = """\
examples:
  python grader.py                                  the exercises, with your last scores
  python grader.py token_bucket                     grade exercises/token_bucket/token_bucket.py
  python grader.py token_bucket --reference         grade the reference solution
  python grader.py token_bucket --mutant no_lock    what a classic wrong answer scores
  python grader.py token_bucket --mutant all --format csv
  python grader.py token_bucket --submission ~/alice.py --submission ~/bob.py
  python grader.py token_bucket --submission returned/ --jobs 2 --format csv
                                                    a folder of submissions, a spreadsheet row each
  python grader.py token_bucket --watch             regrade on every save
  python grader.py token_bucket --check test_refused_request_consumes_nothing
  python grader.py token_bucket --check 'test_keyed_*' --verbose
  python grader.py token_bucket --submission ~/alice.py --visible   the visible checks only
  python grader.py all --reference --format json --output grades.jsonl
  python grader.py billing --submission bob.py --feedback names     hidden checks: names only
  python grader.py billing --submission bob.py --compare bob-june.json   what moved since then
  python grader.py bundle token_bucket billing --output take-home.zip
  python grader.py bundle token_bucket --gradescope --output autograder.zip
  python grader.py hint token_bucket                one more hint each time

exit status: 0 every check passed, 1 some check failed, 2 bad usage
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see --help)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="grader.py",
        description="Grade a kata: run its visible and hidden checks against a submission "
                    "in a sandboxed child process and print the score.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("target", nargs="?", default="list",
                        help="an exercise name, 'all', 'list' (default), 'hint NAME' or "
                             "'bundle NAME... --output PATH'")
    parser.add_argument("names", nargs="*", help=argparse.SUPPRESS)
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--submission", action="append", metavar="PATH",
                        help="grade this file instead of the exercise's stub; repeatable; a "
                             "folder means every .py file in it, a quoted glob is expanded")
    source.add_argument("--reference", action="store_true",
                        help="grade the reference solution (solutions/NAME.py)")
    source.add_argument("--mutant", action="append", metavar="BUG",
                        help="grade a classic wrong answer (tests/mutants/NAME/BUG.diff applied "
                             "to the reference); repeatable; 'all' grades every one")
    parser.add_argument("--check", action="append", metavar="NAME",
                        help="run only this check: a test function name, a check id, a glob "
                             "('test_refill_*') or a unique prefix; repeatable")
    parser.add_argument("--visible", action="store_true",
                        help="run only the visible checks (exercises/NAME/test_NAME.py)")
    parser.add_argument("--format", choices=("text", "json", "csv", "gradescope", "junit"),
                        default="text",
                        help="report format (default: text); json and gradescope write one "
                             "object per submission per line, csv one row per submission")
    parser.add_argument("--feedback", choices=FEEDBACK, default="full",
                        help="what the report shows of hidden checks: full (message and "
                             "example; default), names (name and outcome), score (points per "
                             "category); with bundle --gradescope, what students see")
    parser.add_argument("--compare", metavar="OLD.json",
                        help="after grading, list every check whose outcome moved since OLD.json "
                             "(an earlier --format json report)")
    parser.add_argument("--output", metavar="PATH",
                        help="write the report (or the bundle) here instead of stdout")
    parser.add_argument("--jobs", "-j", type=_jobs, default=1, metavar="N",
                        help="grade N submissions at once (default: 1)")
    parser.add_argument("--watch", action="store_true",
                        help="regrade whenever the submission is saved, showing what changed")
    parser.add_argument("--gradescope", action="store_true",
                        help="with bundle: a Gradescope autograder zip instead of a take-home")
    parser.add_argument("--reset", action="store_true",
                        help="with hint: start again from the first hint")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="show failure messages in full")
    parser.add_argument("--no-mypy", action="store_true",
                        help="skip the unscored mypy --strict line")
    parser.add_argument("--isolation", choices=isolation.MODES,
                        default=os.environ.get(isolation.ENV, "auto"),
                        help="run submissions under bubblewrap (no network, no view of the "
                             "repository or home), or not; auto (default): bwrap where it "
                             f"works, which `grader.py list` reports; ${isolation.ENV} sets "
                             "the default")
    parser.add_argument("--wall-limit", type=_positive, default=240.0, metavar="SECONDS",
                        help="hard limit for grading one submission (default: 240)")
    parser.add_argument("--timeout", type=_positive, default=None, metavar="SECONDS",
                        help="every check's time limit, heavy checks' own aside (default: 30x "
                             "what the check costs the reference, at least 3 s, at most 10 s; "
                             "heavy checks keep their own)")
    return parser


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _jobs(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of jobs >= 1, got {text!r}")
    return int(text)


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
    from grading import forkserver, sandbox

    sandbox.kill_all()
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
        args = build_parser().parse_args(args_list)
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
    if args.target in ("list", "hint"):
        return []
    needed = list(_REQUIRED)
    names = {e.name for e in catalog.exercises()}
    if args.target == "all" or args.target in names:
        from grading import forkserver

        chosen = catalog.exercises() if args.target == "all" else [catalog.Exercise(args.target)]
        needed += sorted(forkserver.libraries_of(chosen))
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
    if args.reset and args.target != "hint":
        raise UsageError("--reset goes with hint: `python grader.py hint NAME --reset`")
    if args.target == "list":
        _reject_extra(args)
        return _list(sys.stdout)
    if args.target == "hint":
        from grading.hints import hint
        if len(args.names) != 1:
            raise UsageError("hint takes one exercise name: `python grader.py hint token_bucket`")
        hint(_find(args.names[0]), sys.stdout, reset=args.reset)
        return 0
    if args.target == "bundle":
        from grading.bundle import BundleError, bundle, gradescope
        if not args.names or not args.output:
            raise UsageError("bundle takes exercise names and --output DIR_OR_ZIP")
        exercises = [_find(name) for name in args.names]
        if args.gradescope and len(exercises) != 1:
            raise UsageError("a Gradescope autograder is for one exercise")
        try:
            if args.gradescope:
                gradescope(exercises[0], Path(args.output), feedback=args.feedback)
            else:
                bundle(exercises, Path(args.output))
        except BundleError as exc:
            raise UsageError(str(exc)) from None
        print(f"wrote {args.output}: {', '.join(e.name for e in exercises)}", file=sys.stderr)
        return 0
    _reject_extra(args)
    exercises = catalog.exercises() if args.target == "all" else [_find(args.target)]
    if args.target == "all" and (args.submission or args.mutant):
        raise UsageError(f"--{'submission' if args.submission else 'mutant'} needs one exercise "
                         "name, not 'all'")
    from grading.run import grade_all
    return grade_all(exercises, args)


def _reject_extra(args: argparse.Namespace) -> None:
    if args.names:
        raise UsageError(f"unexpected argument {args.names[0]!r}")


def _find(name: str) -> catalog.Exercise:
    try:
        return catalog.find(name)
    except catalog.UnknownExercise as exc:
        raise UsageError(f"{exc} (`python grader.py list` shows them all)") from None


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
