"""The data of a grading: a check, its result, a submission's grade. No process, no rendering:
`sandbox` makes these, `report` renders them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from grading.contract import CATEGORIES, FinalStatus, Visibility
from grading.contract import FINAL as STATUSES

__all__ = ["CATEGORIES", "FEEDBACK", "STATUSES", "Check", "Grade", "Result", "num"]
FEEDBACK = ("full", "names", "score")  # what a report shows of the hidden checks


@dataclass(frozen=True)
class Check:
    """One check as collected from the trusted stub."""

    id: str
    name: str
    visibility: Visibility
    category: str
    points: float
    timeout: float
    file: str = ""  # the test file, relative to the work directory ("" if not known)
    # Seconds the reference spent on it, as `grading.signatures refresh` measured (the time limit
    # where nothing is stored): what `sandbox` deals checks to children by, never a limit.
    cost: float = 0.0
    costed: bool = False  # `cost` was measured on the reference (not a stand-in)


@dataclass
class Result:
    check: Check
    status: FinalStatus | Literal["pending"] = "pending"
    message: str = ""
    falsifying: str = ""
    duration: float = 0.0
    # What the check measured, if it measures (see grading/hidden/kata_measure.py): each a
    # {"label", "figure", "limit"}; shown by `python -m grading.margins`, never scored.
    figures: list[dict[str, Any]] = field(default_factory=list)

    @property
    def earned(self) -> float:
        return self.check.points if self.status == "passed" else 0.0


@dataclass
class Grade:
    exercise: str
    submission: str
    results: list[Result]
    duration: float
    mypy: str = ""  # one line: "clean", "N errors: first error", or "" when not run
    provenance: dict[str, Any] = field(default_factory=dict)  # what graded it (see provenance.py)
    # Known bugs the failures look like, best first: {"bug", "summary", "rule"} (diagnose.py)
    diagnoses: list[dict[str, str]] = field(default_factory=list)
    # Why the submission was not graded check by check, or why every check failed the same way
    # ("not started: ...", "syntax error at line 9: ..."); "" for an ordinary grading.
    reason: str = ""
    refused: bool = False  # `reason` was found before any check ran, and none did

    @property
    def score(self) -> float:
        return sum(r.earned for r in self.results)

    @property
    def max_score(self) -> float:
        return sum(r.check.points for r in self.results)

    @property
    def passed(self) -> bool:
        return all(r.status == "passed" for r in self.results)


def num(x: float) -> float | int:
    """A score as people write it: 3, not 3.0; 2.5 stays."""
    return int(x) if float(x).is_integer() else round(x, 2)
