"""What one `grader.py grade` command asks for: the input of `run`.

`cli` builds a `GradeRequest` from the command line; the tests, the bench and the cohort verb
build one directly. Standard library only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from grading.catalog import Exercise
from grading.contract import CHECK_LIMIT

__all__ = ["CHECK_LIMIT", "FORMATS", "WALL_LIMIT", "GradeRequest"]

WALL_LIMIT = 240.0  # seconds for grading one submission, resumes included
FORMATS = ("text", "json", "csv", "gradescope", "junit")  # what `report.render` writes


@dataclass(frozen=True)
class GradeRequest:
    """Which submissions of which exercises to grade, how, and where the report goes."""

    exercises: tuple[Exercise, ...]
    submissions: tuple[str, ...] = ()  # files, folders or quoted globs; none: the stub
    reference: bool = False  # grade solutions/NAME.py
    mutants: tuple[str, ...] = ()  # BUG names, or "all"
    checks: tuple[str, ...] = ()  # names, ids, globs or prefixes; none: every check
    visible: bool = False  # the visible checks only
    format: str = "text"
    feedback: str = "full"
    compare: Path | None = None  # an earlier `--format json` report
    output: Path | None = None  # None: stdout
    jobs: int = 1
    watch: bool = False
    verbose: bool = False
    mypy: bool = True
    isolation: str = "auto"
    wall_limit: float = WALL_LIMIT
    timeout: float | None = None  # every check's limit; None: from what it cost the reference

    def __post_init__(self) -> None:
        """A request made in code is held to what the command line allows."""
        from grading.results import FEEDBACK

        if self.format not in FORMATS:
            raise ValueError(f"no report format {self.format!r} (one of {', '.join(FORMATS)})")
        if self.feedback not in FEEDBACK:
            raise ValueError(f"no feedback level {self.feedback!r} (one of "
                             f"{', '.join(FEEDBACK)})")
        if self.jobs < 1 or not self.wall_limit > 0 or (self.timeout is not None
                                                         and not self.timeout > 0):
            raise ValueError("jobs, the wall limit and the timeout must be positive")

    @property
    def every_check(self) -> bool:
        """Every check runs: what a diagnosis, which matches whole signatures, needs."""
        return not (self.checks or self.visible)

    @property
    def candidates(self) -> bool:
        """Every check of a candidate's file (not the reference or a mutant): what `list`
        remembers as the last score."""
        return self.every_check and not (self.reference or self.mutants)
