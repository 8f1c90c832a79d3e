"""`python -m bench [NAME...]`: measure the references and the grader against their floors."""

from __future__ import annotations

import argparse
import difflib
import json
import os
import sys
import time
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TextIO

from bench.core import ROOT, Context, Row
from grading.inputs import Parser, UsageError

EXAMPLES = """\
examples:
  uv run --group bench python -m bench            everything (under 5 minutes), plot in bench/out/
  uv run --group bench python -m bench interval_union billing   two of them
  uv run --group bench python -m bench grader --grade-all       every reference, not one sample
  uv run --group bench python -m bench xid_log_parser interval_union --plot docs/bench.png
  uv run python -m bench --format json --output bench/out/bench.json   no plot, no matplotlib
  uv run python -m bench cohort --cohort-size 50   grader.py cohort, and the copy search's cost

The `bench` group installs matplotlib for the plot; without it the table is printed all the same.
Every figure is a ratio to a baseline measured in the same run (best of several interleaved
repetitions), or a growth rate. Exit status: 0 every target met, 1 some missed, 2 bad usage.
"""
NAMES = ("xid_log_parser", "interval_union", "billing", "versioned_kv", "token_bucket",
         "micro_batcher", "job_api", "hang_finder", "kv_cache", "mig_packing", "grader",
         "cohort")
# Run only when named: grading a cohort of 50 candidates takes minutes.
OPTIONAL = ("cohort",)
PLOT = ROOT / "bench" / "out" / "bench.png"


def build_parser() -> argparse.ArgumentParser:
    parser = Parser(
        prog="python -m bench",
        description="Benchmark each exercise's reference solution, and the grader, against a "
                    "baseline measured in the same run; print each figure beside its target.",
        epilog=EXAMPLES, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("names", nargs="*", metavar="NAME",
                        help=f"benchmarks to run (default: all but {', '.join(OPTIONAL)}): "
                             f"{', '.join(NAMES)}")
    parser.add_argument("--format", choices=("text", "json"), default="text",
                        help="text: a table for people (default); json: one object per row")
    parser.add_argument("--output", metavar="FILE", type=Path,
                        help="write the table (or the JSON) to FILE instead of stdout")
    parser.add_argument("--plot", metavar="PNG", type=Path, default=PLOT,
                        help="where the chart goes (default: bench/out/bench.png); drawn when"
                             " a chosen benchmark plots (xid_log_parser, interval_union) and"
                             " matplotlib is installed")
    parser.add_argument("--grade-all", action="store_true",
                        help="grader: grade every reference, not one (several minutes more)")
    parser.add_argument("--cohort-size", type=_size, default=50, metavar="N",
                        help="cohort: candidates in the cohort graded (default: 50)")
    return parser


def _size(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number of candidates >= 1, got "
                                         f"{text!r}")
    return int(text)


def _check_names(names: Sequence[str]) -> list[str]:
    for name in names:
        if name not in NAMES:
            close = difflib.get_close_matches(name, NAMES, n=3, cutoff=0.4)
            hint = f"did you mean {' or '.join(close)}?" if close else f"one of {', '.join(NAMES)}"
            raise UsageError(f"unknown benchmark {name!r}: {hint}")
    if not names:
        return [name for name in NAMES if name not in OPTIONAL]
    return [name for name in NAMES if name in names]


def _benchmarks(grade_all: bool, cohort_size: int = 50
                ) -> dict[str, Callable[[Context], list[Row]]]:
    with warnings.catch_warnings():  # starlette's TestClient announces its httpx successor
        warnings.simplefilter("ignore", DeprecationWarning)
        from bench import (
            cases_cohort,
            cases_data,
            cases_grader,
            cases_hang_finder,
            cases_kv_cache,
            cases_mig_packing,
            cases_service,
        )
    return {
        "xid_log_parser": cases_data.xid_log_parser,
        "interval_union": cases_data.interval_union,
        "billing": cases_data.billing,
        "versioned_kv": cases_data.versioned_kv,
        "token_bucket": cases_service.token_bucket,
        "micro_batcher": cases_service.micro_batcher,
        "job_api": cases_service.job_api,
        "hang_finder": cases_hang_finder.hang_finder,
        "kv_cache": cases_kv_cache.kv_cache,
        "mig_packing": cases_mig_packing.mig_packing,
        "grader": lambda ctx: cases_grader.grader(
            ctx, cases_grader.ALL if grade_all else cases_grader.SAMPLE),
        "cohort": lambda ctx: cases_cohort.cohort(ctx, cohort_size),
    }


def _progress(stream: TextIO, started: float, total: int) -> Callable[[int], Callable[[str], None]]:
    tty = stream.isatty()

    def for_step(step: int) -> Callable[[str], None]:
        def say(message: str) -> None:
            line = f"[{step}/{total} {time.monotonic() - started:5.0f}s] {message}"
            stream.write(f"\r{line}\x1b[K" if tty else line + "\n")
            stream.flush()
        return say

    return for_step


def _value(row: Row) -> str:
    if row.unit == "x":
        return f"{row.value:.2f}x"
    return f"{row.value:.1f} s" if row.unit == "s" else f"{row.value:g}"


def table(rows: Sequence[Row]) -> str:
    """The rows as an aligned text table (markdown pipes, so it pastes into a README)."""
    head = ("exercise", "measured against", "figure", "target", "", "made of")
    body = [(r.exercise, r.measure, _value(r), r.target, r.verdict, r.note) for r in rows]
    widths = [max(len(line[i]) for line in (head, *body)) for i in range(len(head))]

    def fmt(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) for c, w in zip(cells, widths, strict=True)) + " |"

    rule = "|" + "|".join("-" * (w + 2) for w in widths) + "|"
    return "\n".join([fmt(head), rule, *(fmt(line) for line in body)])


def _plot(ctx: Context, path: Path, caption: str = "") -> str | None:
    """Draw the run's panels to `path`: one line saying where, or how to get matplotlib."""
    if not ctx.panels:
        return None
    from bench import plot

    if not plot.available():
        return (f"plot: not drawn, matplotlib is not installed; `{plot.INSTALL_HINT}` draws it"
                " (the `bench` dependency group)")
    return f"plot: {plot.write_chart(ctx.panels, path, caption=caption)}"


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
        names = _check_names(args.names)
    except UsageError as exc:
        print(f"bench: {exc}", file=sys.stderr)
        return 2
    started = time.monotonic()
    load = os.getloadavg()[0]
    progress = _progress(sys.stderr, started, len(names))
    benchmarks = _benchmarks(args.grade_all, args.cohort_size)
    ctx = Context(progress=lambda _: None)
    rows: list[Row] = []
    for step, name in enumerate(names, 1):
        ctx.progress = progress(step)
        ctx.progress(f"{name} ...")
        rows += benchmarks[name](ctx)
    took = time.monotonic() - started
    if sys.stderr.isatty():
        sys.stderr.write("\r\x1b[K")
    plot_line = _plot(ctx, args.plot,
                      f"python -m bench {' '.join(names)}: best of several interleaved runs, on"
                      f" {os.cpu_count()} cores at load {load:.1f} when the run began")
    if args.format == "json":
        text = "\n".join(json.dumps({
            "exercise": r.exercise, "measure": r.measure, "value": round(r.value, 4),
            "unit": r.unit, "target": r.target, "limit": r.limit, "met": r.met,
            "note": r.note}) for r in rows)
        if plot_line:  # stdout holds JSON only
            print(plot_line, file=sys.stderr)
    else:
        missed = sum(r.met is False for r in rows)
        met = sum(r.met is True for r in rows)
        text = "\n".join([
            table(rows), "",
            f"{met} targets met, {missed} missed, {sum(r.met is None for r in rows)} reported;"
            f" {took:.0f} s on {os.cpu_count()} cores at load {load:.1f} when the run began"
            " (a loaded machine inflates ratios against tight C baselines).",
            *([plot_line] if plot_line else [])])
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(text + "\n")
    else:
        print(text)
    return 1 if any(r.met is False for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())
