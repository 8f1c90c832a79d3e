"""Render grades: text for people, JSON / Gradescope / JUnit XML for machines.

Every format is built from the same `Grade`; none of them computes a score of its own.

`feedback` says what a report shows of the hidden checks (visible checks always show all):
`full`, each check's message and falsifying example; `names`, each check's name and outcome;
`score`, only the points per category.
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

from grading.request import FORMATS
from grading.results import CATEGORIES, STATUSES, Grade, Result, num


def _shown(result: Result, feedback: str) -> bool:
    """Whether a check's message and falsifying example may be shown."""
    return result.check.visibility == "visible" or feedback == "full"


def _listed(grade: Grade, feedback: str) -> list[Result]:
    """The checks a report lists one by one: at `score`, only the visible ones."""
    if feedback == "score":
        return [r for r in grade.results if r.check.visibility == "visible"]
    return grade.results


def hidden_by_category(grade: Grade) -> dict[str, dict[str, float | int]]:
    """Points earned and available per category over the hidden checks."""
    out: dict[str, dict[str, float]] = {}
    for r in grade.results:
        if r.check.visibility == "hidden":
            entry = out.setdefault(r.check.category, {"points": 0.0, "max_points": 0.0})
            entry["points"] += r.earned
            entry["max_points"] += r.check.points
    return {c: {k: num(v) for k, v in e.items()} for c, e in out.items()}


def as_dict(grade: Grade, feedback: str = "full") -> dict[str, Any]:
    data: dict[str, Any] = {
        "exercise": grade.exercise,
        "submission": grade.submission,
        "score": num(grade.score),
        "max_score": num(grade.max_score),
        "duration": round(grade.duration, 3),
        "mypy": grade.mypy or None,
        "feedback": feedback,
        "checks": [
            {
                "id": r.check.id,
                "name": r.check.name,
                "visibility": r.check.visibility,
                "category": r.check.category,
                "points": num(r.earned),
                "max_points": num(r.check.points),
                "status": r.status,
                "message": r.message if _shown(r, feedback) else "",
                "falsifying_example": r.falsifying if _shown(r, feedback) else "",
                "duration": round(r.duration, 4),
            }
            for r in _listed(grade, feedback)
        ],
        "grader": grade.provenance,
        "reason": grade.reason or None,
    }
    if feedback == "score":
        data["hidden_by_category"] = hidden_by_category(grade)
    data["diagnosis"] = grade.diagnoses if feedback == "full" else []
    return data


def as_gradescope(grade: Grade, feedback: str = "full") -> dict[str, Any]:
    """The Gradescope autograder `results.json` schema.

    Hidden checks at `names` show their name and outcome, no output; at `score` they are
    `after_published`: students see them, output and all, once grades are published.
    """
    tests = []
    for r in grade.results:
        output = "\n".join(part for part in (r.message, r.falsifying) if part)
        if r.check.visibility == "hidden" and feedback == "names":
            output = ""
        hold_back = r.check.visibility == "hidden" and feedback == "score"
        tests.append({
            "name": r.check.name,
            "number": r.check.id,
            "score": num(r.earned),
            "max_score": num(r.check.points),
            "status": "passed" if r.status == "passed" else "failed",
            "output": output if r.status == "passed" else f"[{r.status}] {output}".rstrip(),
            "tags": [r.check.category, r.check.visibility],
            "visibility": "after_published" if hold_back else "visible",
        })
    summary = f"{grade.exercise}: {num(grade.score)}/{num(grade.max_score)}"
    if feedback == "full":
        summary += "".join(f"\nThis looks like a known bug: {known['summary']}"
                           for known in grade.diagnoses)
    if grade.mypy:
        summary += f"\nmypy --strict (unscored): {grade.mypy}"
    return {"score": num(grade.score), "execution_time": round(grade.duration, 3),
            "output": summary, "tests": tests, "extra_data": {"grader": grade.provenance}}


def as_junit(grades: list[Grade], feedback: str = "full") -> str:
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
        suite_props = ET.SubElement(suite, "properties")
        for key, value in _flat("grader", grade.provenance):
            ET.SubElement(suite_props, "property", {"name": key, "value": value})
        for r in _listed(grade, feedback):
            case = ET.SubElement(suite, "testcase", {
                "classname": f"{grade.exercise}.{r.check.visibility}",
                "name": r.check.name,
                "time": f"{r.duration:.3f}",
            })
            ET.SubElement(case, "properties")
            props = case.find("properties")
            assert props is not None
            for key, value in (("id", r.check.id), ("category", r.check.category),
                               ("points", str(num(r.earned))),
                               ("max_points", str(num(r.check.points)))):
                ET.SubElement(props, "property", {"name": key, "value": value})
            if r.status != "passed":
                tag = "failure" if r.status in ("failed", "timeout") else "error"
                message = r.message if _shown(r, feedback) else ""
                node = ET.SubElement(case, tag, {"message": f"[{r.status}] {message[:200]}",
                                                 "type": r.status})
                if _shown(r, feedback):
                    node.text = "\n".join(part for part in (r.message, r.falsifying) if part)
    ET.indent(suites)
    return ET.tostring(suites, encoding="unicode", xml_declaration=True) + "\n"


def _flat(prefix: str, value: Any) -> list[tuple[str, str]]:
    """A nested mapping as dotted keys: ("grader.python", "3.11.7")."""
    if isinstance(value, dict):
        return [pair for k, v in value.items() for pair in _flat(f"{prefix}.{k}", v)]
    return [(prefix, str(value))]


def as_csv(grades: list[Grade], out: TextIO) -> None:
    """One row per submission, for a spreadsheet: totals, counts and points by category."""
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(["exercise", "submission", "score", "max_score", "percent", *STATUSES,
                     *CATEGORIES, "duration_s", "grader_commit", "checks_sha256", "reason"])
    for grade in grades:
        counts = Counter(r.status for r in grade.results)
        by_category: dict[str, float] = dict.fromkeys(CATEGORIES, 0.0)
        for r in grade.results:
            by_category[r.check.category] = by_category.get(r.check.category, 0.0) + r.earned
        pct = 100 * grade.score / grade.max_score if grade.max_score else 0.0
        writer.writerow([grade.exercise, grade.submission, num(grade.score),
                         num(grade.max_score), f"{pct:.1f}", *(counts[s] for s in STATUSES),
                         *(num(by_category[c]) for c in CATEGORIES), f"{grade.duration:.1f}",
                         grade.provenance.get("commit", ""),
                         grade.provenance.get("checks_sha256", ""), grade.reason])


@dataclass(frozen=True)
class Style:
    """How a report is written: its format (one of `FORMATS`), what it shows of hidden checks
    (one of `FEEDBACK`), messages in full or not, and colours (text only)."""

    format: str = "text"
    feedback: str = "full"
    verbose: bool = False
    color: bool = False


def render(grades: list[Grade], out: TextIO, style: Style = Style()) -> None:
    """Write `grades` to `out` as `style` says."""
    fmt, feedback, verbose, color = style.format, style.feedback, style.verbose, style.color
    if fmt == "json":
        for grade in grades:
            out.write(json.dumps(as_dict(grade, feedback)) + "\n")
    elif fmt == "gradescope":
        for grade in grades:
            out.write(json.dumps(as_gradescope(grade, feedback)) + "\n")
    elif fmt == "junit":
        out.write(as_junit(grades, feedback))
    elif fmt == "csv":
        as_csv(grades, out)
    elif fmt == "text":
        for i, grade in enumerate(grades):
            if i:
                out.write("\n")
            _text(grade, out, color=color, verbose=verbose, feedback=feedback)
    else:
        raise ValueError(f"no report format {fmt!r} (one of {', '.join(FORMATS)})")


_MARKS = {"passed": "pass", "failed": "FAIL", "error": "ERROR", "timeout": "TIME",
          "crashed": "CRASH"}
_COLORS = {"passed": "32", "failed": "31", "error": "31", "timeout": "33", "crashed": "35"}


def use_color(stream: TextIO) -> bool:
    return stream.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def _text(grade: Grade, out: TextIO, *, color: bool, verbose: bool, feedback: str) -> None:
    def paint(text: str, status: str) -> str:
        return f"\033[{_COLORS[status]}m{text}\033[0m" if color else text

    out.write(f"{grade.exercise} · {grade.submission}\n")
    width = max((len(f"{num(r.check.points)}") for r in grade.results), default=1)
    if grade.reason:  # one failure, said once
        said = "not graded" if grade.refused else "every check failed the same way"
        out.write(f"  {paint(said, 'failed')}: {grade.reason}\n")
    for r in [] if grade.reason else _listed(grade, feedback):
        mark = paint(f"{_MARKS.get(r.status, r.status):<5}", r.status)
        pts = f"{num(r.earned):>{width}}/{num(r.check.points):<{width}}"
        out.write(f"  {mark} {pts}  {r.check.visibility:<7}  {r.check.name}\n")
        if r.status == "passed":
            continue
        if _shown(r, feedback):
            detail = [line for line in r.message.splitlines() if line.strip()]
            detail += [line for line in r.falsifying.splitlines() if line.strip()]
            for line in detail if verbose else _kept(detail, 6):
                out.write(f"          {line if verbose else _clip(line)}\n")
        out.write(f"          rerun: --check {r.check.id.split('::', 1)[1]}\n")
    if feedback == "full":
        for known in grade.diagnoses:
            rule = f" (breaks {known['rule']})" if known.get("rule") else ""
            out.write(f"  This looks like a known bug: {known['summary']}{rule}\n")
    if feedback == "score":
        for category, earned in hidden_by_category(grade).items():
            out.write(f"  hidden   {earned['points']}/{earned['max_points']}  {category} "
                      "(hidden checks, by category)\n")
    if grade.mypy:
        out.write(f"  mypy --strict (unscored): {grade.mypy}\n")
    counts = Counter(r.status for r in grade.results)
    tally = ", ".join(f"{counts[s]} {s}" for s in STATUSES if counts[s])
    pct = 100 * grade.score / grade.max_score if grade.max_score else 0.0
    out.write(f"score {num(grade.score)}/{num(grade.max_score)} ({pct:.0f}%) · {tally} · "
              f"{grade.duration:.1f} s\n")


_WIDTH = 160


def _kept(lines: list[str], most: int) -> list[str]:
    """At most `most` of `lines`, in order: the first (what failed), the last (a check's own
    explanation often ends its message), the comparisons (`a != b`), then the earliest; where
    lines were left out, a line saying how many."""
    if len(lines) <= most:
        return lines
    order = [0, len(lines) - 1, *(i for i, line in enumerate(lines) if " != " in line),
             *range(len(lines))]
    chosen: list[int] = []
    for i in order:
        if i not in chosen:
            chosen.append(i)
        if len(chosen) == most:
            break
    kept, previous = [], -1
    for i in sorted(chosen):
        gap = i - previous - 1
        if gap:
            kept.append(f"... ({gap} more line{'s' if gap > 1 else ''}; --verbose shows all)")
        kept.append(lines[i])
        previous = i
    return kept


def _clip(line: str) -> str:
    """A long line cut in the middle (its start says what, its end often the value that
    differs), with a pointer to --verbose."""
    if len(line) <= _WIDTH:
        return line
    head, tail = _WIDTH * 3 // 5, _WIDTH // 4
    return (f"{line[:head]} ... ({len(line) - head - tail} characters; --verbose shows all) "
            f"... {line[-tail:]}")


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
