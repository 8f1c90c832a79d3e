"""`python grader.py ...`: the command line, parsed into a verb and, for `grade`, a
`GradeRequest` (`commands` carries them out).

Standard library only, like `commands`: see there.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Sequence
from pathlib import Path

from grading import catalog, isolation
from grading.inputs import Parser, UsageError
from grading.request import CHECK_LIMIT, FORMATS, WALL_LIMIT, GradeRequest
from grading.results import FEEDBACK

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
  python grader.py cohort returned/ --output report/   a take-home per candidate: CSV, JSON, HTML
  python grader.py merge shard-*/cohort.json --output report/   shards of a cohort, combined

exit status: 0 every check passed, 1 some check failed, 2 bad usage
"""


VERBS = ("grade", "list", "hint", "bundle", "cohort", "merge")
_HELP = ("-h", "--help")


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="grader.py",
        description="Grade a kata: run its visible and hidden checks against a submission "
                    "in a sandboxed child process and print the score. `grade` is the verb "
                    "when none is given: `grader.py NAME` grades NAME; with no argument at all, "
                    "`list`.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    verbs = parser.add_subparsers(dest="verb", metavar="VERB", parser_class=Parser)
    _grade_parser(verbs.add_parser(
        "grade", help="grade submissions of an exercise (the default verb)",
        description="Grade submissions of an exercise ('all': every exercise).",
        epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter))
    verbs.add_parser("list", help="the exercises, with your last scores",
                     description="The exercises, with your last scores and the isolation "
                                 "in use.")
    hint = verbs.add_parser("hint", help="one more hint for an exercise each time",
                            description="Show the next hint of an exercise.")
    hint.add_argument("name", metavar="NAME", help="an exercise")
    hint.add_argument("--reset", action="store_true", help="start again from the first hint")
    bundle = verbs.add_parser("bundle", help="a take-home or a Gradescope autograder zip",
                              description="Write a take-home (a folder or a zip) of exercises, "
                                          "or a Gradescope autograder zip of one.")
    bundle.add_argument("names", nargs="+", metavar="NAME", help="the exercises")
    bundle.add_argument("--output", required=True, type=Path, metavar="PATH",
                        help="the folder or .zip to write")
    bundle.add_argument("--gradescope", action="store_true",
                        help="a Gradescope autograder zip instead of a take-home")
    bundle.add_argument("--feedback", choices=FEEDBACK, default="full",
                        help="with --gradescope, what students see of hidden checks")
    _cohort_parser(verbs.add_parser(
        "cohort", help="grade a folder of returned take-homes, a row per candidate",
        description="Grade every exercise of every candidate in RETURNED (a folder or a .zip "
                    "per candidate, laid out as the bundle asks or flatter) and write "
                    "cohort.csv, cohort.json, details.jsonl and cohort.html into --output. "
                    "Each exercise's file is NAME.py (in NAME/ or anywhere), else the only .py "
                    "file; pairs of submissions alike enough to be copies are flagged.",
        epilog=COHORT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter))
    merge = verbs.add_parser(
        "merge", help="combine the cohort.json of shards into one cohort's reports",
        description="Combine the cohort.json of every shard of a `cohort --shard K/N` run into "
                    "the CSV, JSON and HTML one unsharded run writes (copies are looked for "
                    "again over the whole cohort).",
        epilog=COHORT_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    merge.add_argument("reports", nargs="+", type=Path, metavar="REPORT.json",
                       help="the cohort.json of each shard")
    merge.add_argument("--output", required=True, type=Path, metavar="DIR",
                       help="the folder to write the merged reports into")
    return parser


COHORT_EPILOG = """\
examples:
  python grader.py cohort returned/ --output report/
  python grader.py cohort returned/ --exercises interval_union versioned_kv --jobs 2 --output r/
  python grader.py cohort returned/ --shard 1/4 --output shard-1/     one quarter of the cohort
  python grader.py merge shard-*/cohort.json --output report/

exit status: 0 the reports were written, 2 bad usage (nothing graded)
"""


def _cohort_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("returned", type=Path, metavar="RETURNED",
                        help="a folder holding one folder or .zip per candidate")
    parser.add_argument("--output", required=True, type=Path, metavar="DIR",
                        help="the folder to write cohort.csv, cohort.json, details.jsonl and "
                             "cohort.html into (made if missing)")
    parser.add_argument("--exercises", nargs="+", metavar="NAME", default=[],
                        help="the exercises to grade (default: those the candidates' files "
                             "name)")
    parser.add_argument("--shard", type=_shard, metavar="K/N",
                        help="grade only the K-th of N equal parts of the candidates (by name); "
                             "combine the parts with `merge`")
    parser.add_argument("--check", action="append", metavar="NAME",
                        help="run only this check (as `grade --check`); repeatable")
    parser.add_argument("--jobs", "-j", type=_jobs, default=1, metavar="N",
                        help="grade N submissions at once (default: 1)")
    parser.add_argument("--no-mypy", action="store_true",
                        help="skip the unscored mypy --strict line")
    parser.add_argument("--isolation", choices=isolation.MODES,
                        default=os.environ.get(isolation.ENV, "auto"),
                        help="as `grade --isolation` (default: auto)")
    parser.add_argument("--wall-limit", type=_positive, default=WALL_LIMIT, metavar="SECONDS",
                        help=f"hard limit for grading one submission (default: {WALL_LIMIT:g})")
    parser.add_argument("--timeout", type=_positive, default=None, metavar="SECONDS",
                        help="every check's time limit, as `grade --timeout`")


def _grade_parser(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("target", metavar="NAME",
                        help="an exercise name (a unique prefix will do), or 'all'")
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
    parser.add_argument("--format", choices=FORMATS, default="text",
                        help="report format (default: text); json and gradescope write one "
                             "object per submission per line, csv one row per submission")
    parser.add_argument("--feedback", choices=FEEDBACK, default="full",
                        help="what the report shows of hidden checks: full (message and "
                             "example; default), names (name and outcome), score (points per "
                             "category)")
    parser.add_argument("--compare", type=Path, metavar="OLD.json",
                        help="after grading, list every check whose outcome moved since OLD.json "
                             "(an earlier --format json report)")
    parser.add_argument("--output", type=Path, metavar="PATH",
                        help="write the report here instead of stdout")
    parser.add_argument("--jobs", "-j", type=_jobs, default=1, metavar="N",
                        help="grade N submissions at once (default: 1)")
    parser.add_argument("--watch", action="store_true",
                        help="regrade whenever the submission is saved, showing what changed")
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
    parser.add_argument("--wall-limit", type=_positive, default=WALL_LIMIT, metavar="SECONDS",
                        help=f"hard limit for grading one submission (default: {WALL_LIMIT:g})")
    parser.add_argument("--timeout", type=_positive, default=None, metavar="SECONDS",
                        help="every check's time limit, heavy checks' own aside (default: 30x "
                             "what the check costs the reference, at least 3 s, at most "
                             f"{CHECK_LIMIT:g} s; heavy checks keep their own)")


def parse(argv: Sequence[str]) -> argparse.Namespace:
    """`argv` parsed, `grade` put first where no verb is given (`list` where nothing is)."""
    args = list(argv)
    if not args:
        args = ["list"]
    elif args[0] not in VERBS and args[0] not in _HELP:
        args.insert(0, "grade")
    return build_parser().parse_args(args)


def request(args: argparse.Namespace) -> GradeRequest:
    """The grading a parsed `grade` command line asks for."""
    if args.target == "all":
        if args.submission or args.mutant:
            raise UsageError(f"--{'submission' if args.submission else 'mutant'} needs one "
                             "exercise name, not 'all'")
        exercises = tuple(catalog.exercises())
    else:
        exercises = (find(args.target),)
    return GradeRequest(
        exercises, submissions=tuple(args.submission or ()), reference=args.reference,
        mutants=tuple(args.mutant or ()), checks=tuple(args.check or ()), visible=args.visible,
        format=args.format, feedback=args.feedback, compare=args.compare, output=args.output,
        jobs=args.jobs, watch=args.watch, verbose=args.verbose, mypy=not args.no_mypy,
        isolation=args.isolation, wall_limit=args.wall_limit, timeout=args.timeout)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number of seconds, got {text!r}")
    return value


def _shard(text: str) -> tuple[int, int]:
    index, _, count = text.partition("/")
    if not (index.isdigit() and count.isdigit() and 1 <= int(index) <= int(count)):
        raise argparse.ArgumentTypeError(f"expected K/N with 1 <= K <= N (as 2/4), got {text!r}")
    return int(index), int(count)


def _jobs(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of jobs >= 1, got {text!r}")
    return int(text)


def find(name: str) -> catalog.Exercise:
    try:
        return catalog.find(name)
    except catalog.UnknownExercise as exc:
        raise UsageError(f"{exc} (`python grader.py list` shows them all)") from None
