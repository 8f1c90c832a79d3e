"""Find exercises from the folder layout: a folder is an exercise, there is no registry.

`exercises/NAME/` with `NAME.py` (the stub) and `test_NAME.py` (the visible tests) is exercise
NAME; its hidden checks are the folder `grading/hidden/NAME/` (test files by topic and one helpers
module), its reference `solutions/NAME.py`, its mutants `tests/mutants/NAME/BUG.diff`.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXERCISES = ROOT / "exercises"
SOLUTIONS = ROOT / "solutions"
GRADER = Path(__file__).resolve().parent  # the grading package
# The grader's modules that run in a grading child, laid into its `lib/` (see `child.library`).
CHILD_SIDE = tuple(GRADER / f"{name}.py" for name in ("plugin", "contract", "guard", "describe"))
HIDDEN = GRADER / "hidden"
MUTANTS = ROOT / "tests" / "mutants"
# Hidden-check modules every exercise shares (the measuring module), laid beside its own.
SHARED = (HIDDEN / "kata_measure.py",)

_DIFFICULTY = re.compile(r"^Difficulty:\s*(\w+)\s*·\s*Time:\s*(\d+)\s*minutes", re.MULTILINE)


@dataclass(frozen=True)
class Exercise:
    name: str

    @property
    def folder(self) -> Path:
        return EXERCISES / self.name

    @property
    def stub(self) -> Path:
        return self.folder / f"{self.name}.py"

    @property
    def visible_tests(self) -> Path:
        return self.folder / f"test_{self.name}.py"

    @property
    def statement(self) -> Path:
        return self.folder / "README.md"

    @property
    def hints(self) -> Path:
        return self.folder / "hints.md"

    @property
    def hidden(self) -> Path:
        """The folder of hidden checks: `test_NAME_<topic>.py` files and `NAME_helpers.py`."""
        return HIDDEN / self.name

    @property
    def hidden_files(self) -> list[Path]:
        """Every Python file of the hidden folder (test files and the helpers module), then the
        modules every exercise's checks share (`SHARED`), laid beside them."""
        own = sorted(self.hidden.glob("*.py")) if self.hidden.is_dir() else []
        return [*own, *SHARED]

    @property
    def grading_files(self) -> list[Path]:
        """What a grading runs besides the submission: the grader's side of the child
        (`CHILD_SIDE`), the visible tests, the hidden checks and the data files.
        Every digest of "the checks" is taken over these, and a Gradescope zip holds them."""
        return [*CHILD_SIDE, self.visible_tests, *self.hidden_files, *self.data_files]

    @property
    def solution(self) -> Path:
        return SOLUTIONS / f"{self.name}.py"

    @property
    def notes(self) -> Path:
        return SOLUTIONS / f"{self.name}.md"

    @property
    def mutants(self) -> list[Path]:
        """The mutant patches, `tests/mutants/NAME/BUG.diff` (see `grading.mutants`)."""
        return sorted((MUTANTS / self.name).glob("*.diff"))

    @property
    def data_files(self) -> list[Path]:
        """Files beside the stub that the tests may read (sample inputs); no Python, no docs."""
        skip = {"README.md", "hints.md"}
        return sorted(p for p in self.folder.iterdir()
                      if p.is_file() and p.suffix != ".py" and p.name not in skip)

    @cached_property
    def _heading(self) -> tuple[str, str, int | None]:
        try:
            text = self.statement.read_text(encoding="utf-8")
        except OSError:
            return self.name, "?", None
        title = next((line[2:].strip() for line in text.splitlines() if line.startswith("# ")),
                     self.name)
        match = _DIFFICULTY.search(text)
        if match is None:
            return title, "?", None
        return title, match.group(1), int(match.group(2))

    @property
    def title(self) -> str:
        return self._heading[0]

    @property
    def difficulty(self) -> str:
        return self._heading[1]

    @property
    def minutes(self) -> int | None:
        return self._heading[2]


def exercises() -> list[Exercise]:
    """Every exercise folder that has its stub and visible tests, by name."""
    if not EXERCISES.is_dir():
        return []
    found = []
    for folder in sorted(EXERCISES.iterdir()):
        exercise = Exercise(folder.name)
        if folder.is_dir() and exercise.stub.is_file() and exercise.visible_tests.is_file():
            found.append(exercise)
    return found


class UnknownExercise(LookupError):
    def __init__(self, name: str, suggestions: list[str]) -> None:
        self.name = name
        self.suggestions = suggestions
        hint = f"; did you mean {' or '.join(suggestions)}?" if suggestions else ""
        super().__init__(f"unknown exercise {name!r}{hint}")


def find(name: str) -> Exercise:
    """The exercise called `name`; `UnknownExercise` with the closest names otherwise."""
    names = [e.name for e in exercises()]
    if name in names:
        return Exercise(name)
    raise UnknownExercise(name, difflib.get_close_matches(name, names, n=3, cutoff=0.5))
