"""Render grades: text for people, JSON / Gradescope / JUnit XML for machines.

Every format is built from the same `Grade`; none of them computes a score of its own.
"""

from __future__ import annotations

import csv
import json
import os
import sys
import xml.etree.ElementTree as ET
from collections import Counter
from dataclasses import dataclass
from typing import Any, TextIO

from grading.sandbox import Result

FORMATS = ("text", "json", "csv", "gradescope", "junit")
CATEGORIES = ("correctness", "edge_cases", "bad_input", "concurrency", "performance")
STATUSES = ("passed", "failed", "error", "timeout", "crashed")


@dataclass
class Grade:
    exercise: str
    submission: str
    results: list[Result]
    duration: float
    mypy: str = ""  # one line: "clean", "N errors: first error", or "" when not run

    @property
    def score(self) -> float:
        return sum(r.earned for r in self.results)

    @property
    def max_score(self) -> float:
        return sum(r.check.points for r in self.results)

    @property
    def passed(self) -> bool:
        return all(r.status == "passed" for r in self.results)


def _num(x: float) -> float | int:
    return int(x) if float(x).is_integer() else round(x, 2)


def as_dict(grade: Grade) -> dict[str, Any]:
    return {
        "exercise": grade.exercise,
        "submission": grade.submission,
        "score": _num(grade.score),
        "max_score": _num(grade.max_score),
        "duration": round(grade.duration, 3),
        "mypy": grade.mypy or None,
        "checks": [
            {
                "id": r.check.id,
                "name": r.check.name,
                "visibility": r.check.visibility,
                "category": r.check.category,
                "points": _num(r.earned),
                "max_points": _num(r.check.points),
                "status": r.status,
                "message": r.message,
                "falsifying_example": r.falsifying,
                "duration": round(r.duration, 4),
            }
            for r in grade.results
        ],
    }


def as_gradescope(grade: Grade) -> dict[str, Any]:
    """The Gradescope autograder `results.json` schema."""
    tests = []
    for r in grade.results:
        output = "\n".join(part for part in (r.message, r.falsifying) if part)
        tests.append({
            "name": r.check.name,
            "number": r.check.id,
            "score": _num(r.earned),
            "max_score": _num(r.check.points),
            "status": "passed" if r.status == "passed" else "failed",
            "output": output if r.status == "passed" else f"[{r.status}] {output}".rstrip(),
            "tags": [r.check.category, r.check.visibility],
            "visibility": "visible",
        })
    summary = f"{grade.exercise}: {_num(grade.score)}/{_num(grade.max_score)}"
    if grade.mypy:
        summary += f"\nmypy --strict (unscored): {grade.mypy}"
    return {"score": _num(grade.score), "execution_time": round(grade.duration, 3),
            "output": summary, "tests": tests}


def as_junit(grades: list[Grade]) -> str:
    suites = ET.Element("testsuites")
    for grade in grades:
        counts = Counter(r.status for r in grade.results)
        suite = ET.SubElement(suites, "testsuite", {
            "name": f"{grade.exercise} ({grade.submission})",
            "tests": str(len(grade.results)),
            "failures": str(counts["failed"] + counts["timeout"]),
            "errors": str(counts["error"] + counts["crashed"]),
            "time": f"{grade.duration:.3f}",
        })
        for r in grade.results:
            case = ET.SubElement(suite, "testcase", {
                "classname": f"{grade.exercise}.{r.check.visibility}",
                "name": r.check.name,
                "time": f"{r.duration:.3f}",
            })
            ET.SubElement(case, "properties")
            props = case.find("properties")
            assert props is not None
            for key, value in (("id", r.check.id), ("category", r.check.category),
                               ("points", str(_num(r.earned))),
                               ("max_points", str(_num(r.check.points)))):
                ET.SubElement(props, "property", {"name": key, "value": value})
            if r.status != "passed":
                tag = "failure" if r.status in ("failed", "timeout") else "error"
                node = ET.SubElement(case, tag, {"message": f"[{r.status}] {r.message[:200]}",
                                                 "type": r.status})
                node.text = "\n".join(part for part in (r.message, r.falsifying) if part)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def as_csv(grades: list[Grade], out: TextIO) -> None:
    """One row per submission, for a spreadsheet: totals, counts and points by category."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["exercise", "submission", "score", "max_score", "percent", *STATUSES,
                     *CATEGORIES, "duration_s"])
    for grade in grades:
        counts = Counter(r.status for r in grade.results)
        by_category: dict[str, float] = dict.fromkeys(CATEGORIES, 0.0)
        for r in grade.results:
            by_category[r.check.category] = by_category.get(r.check.category, 0.0) + r.earned
        pct = 100 * grade.score / grade.max_score if grade.max_score else 0.0
        writer.writerow([grade.exercise, grade.submission, _num(grade.score),
                         _num(grade.max_score), f"{pct:.1f}", *(counts[s] for s in STATUSES),
                         *(_num(by_category[c]) for c in CATEGORIES), f"{grade.duration:.1f}"])


def changes(before: Grade | None, after: Grade) -> list[str]:
    """What a regrade changed: checks newly passing or newly failing, and the score."""
    if before is None:
        return []
    was = {r.check.id: r.status for r in before.results}
    fixed = [r.check.name for r in after.results
             if r.status == "passed" and was.get(r.check.id, "passed") != "passed"]
    broke = [r.check.name for r in after.results
             if r.status != "passed" and was.get(r.check.id) == "passed"]
    lines = [f"since the last run: score {_num(before.score)} -> {_num(after.score)}"]
    lines += [f"  now passing: {name}" for name in fixed]
    lines += [f"  now failing: {name}" for name in broke]
    if not fixed and not broke:
        lines.append("  no check changed")
    return lines


def render(grades: list[Grade], fmt: str, out: TextIO, *, color: bool = False,
           verbose: bool = False) -> None:
    if fmt == "json":
        for grade in grades:
            out.write(json.dumps(as_dict(grade)) + "\n")
    elif fmt == "gradescope":
        for grade in grades:
            out.write(json.dumps(as_gradescope(grade)) + "\n")
    elif fmt == "junit":
        out.write(as_junit(grades))
    elif fmt == "csv":
        as_csv(grades, out)
    else:
        for i, grade in enumerate(grades):
            if i:
                out.write("\n")
            _text(grade, out, color=color, verbose=verbose)


_MARKS = {"passed": "pass", "failed": "FAIL", "error": "ERROR", "timeout": "TIME",
          "crashed": "CRASH"}
_COLORS = {"passed": "32", "failed": "31", "error": "31", "timeout": "33", "crashed": "35"}


def use_color(stream: TextIO) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _text(grade: Grade, out: TextIO, *, color: bool, verbose: bool) -> None:
    def paint(text: str, status: str) -> str:
        return f"\033[{_COLORS[status]}m{text}\033[0m" if color else text

    out.write(f"{grade.exercise} · {grade.submission}\n")
    width = max((len(f"{_num(r.check.points)}") for r in grade.results), default=1)
    for r in grade.results:
        mark = paint(f"{_MARKS.get(r.status, r.status):<5}", r.status)
        pts = f"{_num(r.earned):>{width}}/{_num(r.check.points):<{width}}"
        out.write(f"  {mark} {pts}  {r.check.visibility:<7}  {r.check.name}\n")
        if r.status != "passed":
            detail = [line for line in r.message.splitlines() if line.strip()]
            detail += [line for line in r.falsifying.splitlines() if line.strip()]
            limit = len(detail) if verbose else 6
            for line in detail[:limit]:
                out.write(f"          {line[:160]}\n")
            if len(detail) > limit:
                more = len(detail) - limit
                out.write(f"          ... ({more} more lines; --verbose shows all)\n")
    if grade.mypy:
        out.write(f"  mypy --strict (unscored): {grade.mypy}\n")
    counts = Counter(r.status for r in grade.results)
    tally = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
    pct = 100 * grade.score / grade.max_score if grade.max_score else 0.0
    out.write(f"score {_num(grade.score)}/{_num(grade.max_score)} ({pct:.0f}%) · {tally} · "
              f"{grade.duration:.1f} s\n")


class ProgressLine:
    """A live one-line progress display on a terminal; silent otherwise."""

    def __init__(self, stream: TextIO | None = None, *, live: bool | None = None) -> None:
        self._stream = stream or sys.stderr
        self._live = self._stream.isatty() if live is None else live
        self._width = 0

    def __call__(self, done: int, total: int, label: str) -> None:
        if not self._live:
            return
        text = f"[{done}/{total}] {label}"[:100]
        self._stream.write("\r" + text.ljust(self._width))
        self._stream.flush()
        self._width = len(text)

    def clear(self) -> None:
        if self._live and self._width:
            self._stream.write("\r" + " " * self._width + "\r")
            self._stream.flush()
            self._width = 0
