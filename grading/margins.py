"""`python -m grading.margins [NAME...]`: how far every measuring check is from its threshold.

A hidden check that proves a cost class (see `grading/hidden/kata_measure.py`) reports each
figure it measured (a growth ratio, a ratio to a floor, a count) with its threshold. This grades
each exercise's reference, then every mutant whose header names a measuring check, and prints
one row per figure: the reference's margin is the threshold over its figure, a mutant's is its
figure over the threshold (`inf`: stopped at the margin). A verdict that holds on every machine
needs both at least `MARGIN`; the command exits 1 when one is not.
"""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from grading import catalog, isolation, mutants, sandbox, signatures
from grading.collect import collect
from grading.results import Check, Result

MARGIN = 2.0  # the same as kata_measure.MARGIN (a test holds them equal)


@dataclass(frozen=True)
class Row:
    exercise: str
    check: str
    label: str
    submission: str  # "reference" or the mutant's name
    figure: float
    limit: float

    @property
    def reference(self) -> bool:
        return self.submission == "reference"

    @property
    def margin(self) -> float:
        """How far the figure is on the right side of the limit (< 1: the wrong side)."""
        if self.reference:
            return math.inf if self.figure <= 0 else self.limit / self.figure
        return self.figure / self.limit if self.limit > 0 else math.inf

    @property
    def exact(self) -> bool:
        """A count (operations, steps): the same on every machine, so any margin holds."""
        return self.label.startswith("count")

    @property
    def growth(self) -> bool:
        """A growth ratio: a class of cost (linear against quadratic), where a 2x margin on
        both sides is a property of the sizes chosen. A ratio to a floor measures a constant
        factor, whose wrong answers may differ from right ones by less than 4x."""
        return self.label == "growth"

    @property
    def ok(self) -> bool:
        return self.exact or self.margin >= MARGIN


def rows_of(exercise: str, submission: str, results: Sequence[Result]) -> list[Row]:
    return [Row(exercise, r.check.id.split("::", 1)[1], f["label"], submission,
                float(f["figure"]), float(f["limit"]))
            for r in results for f in r.figures]


def measure(exercise: catalog.Exercise, jobs: int = 1) -> list[Row]:
    """The figures of `exercise`'s reference, then of each mutant named by a measuring check."""
    checks = collect(exercise, costs=signatures.costs(exercise))
    reference = sandbox.grade(exercise, exercise.solution, checks)
    rows = rows_of(exercise.name, "reference", reference)
    measuring = {row.check.split("[")[0] for row in rows}
    wanted = [(m, [c for c in checks if c.id.split("::", 1)[1].split("[")[0] in named])
              for m in mutants.of(exercise)
              if (named := set(m.caught_by) & measuring)]

    def one(job: tuple[mutants.Mutant, list[Check]]) -> list[Row]:
        mutant, only = job
        results = sandbox.grade(exercise, mutants.materialize(mutant), only)
        return [row for row in rows_of(exercise.name, mutant.bug, results)
                if row.check.split("[")[0] in mutant.caught_by]

    with ThreadPoolExecutor(max(1, jobs)) as pool:
        for found in pool.map(one, wanted):
            rows.extend(found)
    return rows


def _figure(x: float) -> str:
    return "stopped" if math.isinf(x) else f"{x:.3g}"


def table(rows: Sequence[Row]) -> list[str]:
    """The rows as a Markdown table, worst margin first within each check."""
    lines = ["| exercise | check | measure | submission | figure | limit | margin | |",
             "|---|---|---|---|---|---|---|---|"]
    for row in sorted(rows, key=lambda r: (r.exercise, r.check, not r.reference, r.margin)):
        margin = "≥ 2 (stopped)" if math.isinf(row.margin) else f"{row.margin:.2f}"
        lines.append(f"| {row.exercise} | `{row.check}` | {row.label} | {row.submission} | "
                     f"{_figure(row.figure)} | {row.limit:g} | {margin} | "
                     f"{'exact' if row.exact else 'ok' if row.ok else 'LOW'} |")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m grading.margins",
        description="Grade each reference and every mutant named by a measuring check; print "
                    "each figure, its threshold and the margin (exit 1 if one is under "
                    f"{MARGIN:g}x).")
    parser.add_argument("names", nargs="*", metavar="NAME", help="exercises (default: all)")
    parser.add_argument("--jobs", "-j", type=int, default=1, metavar="N",
                        help="grade N mutants at once (default: 1: timing is cleanest alone)")
    parser.add_argument("--output", metavar="FILE.md", help="also write the table here")
    args = parser.parse_intermixed_args(argv)
    known = {e.name: e for e in catalog.exercises()}
    unknown = [n for n in args.names if n not in known]
    if unknown:
        parser.error(f"unknown exercise {unknown[0]!r} (known: {', '.join(sorted(known))})")
    isolation.choose("none")  # the references and mutants are the repository's own code
    rows: list[Row] = []
    for i, name in enumerate(args.names or sorted(known), 1):
        print(f"margins: [{i}/{len(args.names or known)}] {name}", file=sys.stderr, flush=True)
        rows.extend(measure(known[name], args.jobs))
    lines = table(rows)
    print("\n".join(lines))
    if args.output:
        Path(args.output).write_text("\n".join(lines) + "\n", encoding="utf-8")
    low = [r for r in rows if not r.ok]
    print(f"{len(rows)} figures, {len(low)} under a {MARGIN:g}x margin", file=sys.stderr)
    return 1 if low else 0


if __name__ == "__main__":
    sys.exit(main())
