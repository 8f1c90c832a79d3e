"""Mutants: one classic bug each, kept as a patch against the exercise's reference.

`tests/mutants/NAME/BUG.diff` starts with a free-text header (the bug in one line, why
candidates write it, one `Caught by: test_...` line per hidden check that must catch it), then a
unified diff against `solutions/NAME.py`. `git apply` skips the header, as it skips a commit
message. A small patch shows the bug at a glance and cannot drift from the reference: when the
reference changes under it, the patch stops applying and the suite says so.

Every consumer (the repository's tests, the benchmark, `grader.py NAME --mutant BUG`) turns a
patch into a module with `materialize`. Maintainers use the command line:

    python -m grading.mutants list [NAME]              every mutant with its one-line summary
    python -m grading.mutants show NAME BUG            the mutant as a whole module, on stdout
    python -m grading.mutants make NAME BUG EDITED.py  a new patch: the reference -> EDITED.py
    python -m grading.mutants refresh NAME [BUG]       re-derive patches after the reference moved

Standard library only: the grader's parent process imports this.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from grading import catalog, files

CACHE = catalog.ROOT / ".grader" / "mutants"
_DIFF_START = ("--- ", "diff ")


class MutantError(Exception):
    """A mutant that cannot be found or whose patch no longer applies."""


@dataclass(frozen=True)
class Mutant:
    exercise: str
    bug: str
    patch: Path

    @property
    def header(self) -> str:
        """The free text before the diff."""
        lines = []
        for line in self.patch.read_text(encoding="utf-8").splitlines():
            if line.startswith(_DIFF_START):
                break
            lines.append(line)
        return "\n".join(lines).strip()

    @property
    def summary(self) -> str:
        """The header's first paragraph, on one line: what the bug is."""
        first = self.header.split("\n\n", 1)[0]
        return " ".join(first.split()) or self.bug

    @property
    def caught_by(self) -> list[str]:
        """The hidden checks that must fail on this mutant."""
        return [line.split(":", 1)[1].strip() for line in self.header.splitlines()
                if line.startswith("Caught by:")]

    @property
    def label(self) -> str:
        return f"{self.exercise}/{self.bug}"

    def refresh_command(self) -> str:
        return f"uv run python -m grading.mutants refresh {self.exercise} {self.bug}"


def of(exercise: catalog.Exercise) -> list[Mutant]:
    """Every mutant of `exercise`, by name."""
    return [Mutant(exercise.name, p.stem, p) for p in exercise.mutants]


def find(exercise: catalog.Exercise, bug: str) -> Mutant:
    """The mutant `bug` of `exercise`; `MutantError` naming the closest ones otherwise."""
    known = {m.bug: m for m in of(exercise)}
    if bug in known:
        return known[bug]
    close = difflib.get_close_matches(bug, known, n=3, cutoff=0.4)
    hint = (f"did you mean {' or '.join(close)}?" if close
            else f"`python -m grading.mutants list {exercise.name}` lists them")
    raise MutantError(f"{exercise.name} has no mutant {bug!r}: {hint}")


def materialize(mutant: Mutant, dest: Path | None = None) -> Path:
    """Apply the patch to a copy of today's reference; return the path of the buggy module.

    Written to `dest` (a file path), by default `.grader/mutants/NAME/BUG.py`, atomically, so
    concurrent callers each see a whole file. Raises `MutantError`, naming the patch and the
    command that re-derives it, when the patch does not apply.
    """
    exercise = catalog.Exercise(mutant.exercise)
    target = dest if dest is not None else CACHE / mutant.exercise / f"{mutant.bug}.py"
    with tempfile.TemporaryDirectory(prefix="mutant-") as tmp:
        patched = _apply(Path(tmp), exercise.solution, mutant.patch, fuzz=False)
        if patched is None:
            raise MutantError(
                f"{_rel(mutant.patch)} no longer applies to {_rel(exercise.solution)}; "
                f"re-derive it with `{mutant.refresh_command()}`")
        files.write_atomic(target, patched.read_bytes())
    return target


def _apply(tmp: Path, reference: Path, patch: Path, *, fuzz: bool) -> Path | None:
    """The reference with `patch` applied, inside `tmp`; None when it does not apply."""
    rel = Path("solutions") / reference.name
    (tmp / "solutions").mkdir(parents=True)
    shutil.copyfile(reference, tmp / rel)
    # Outside any repository, so that git applies to these files and nothing else.
    env = {**_environ(), "GIT_CEILING_DIRECTORIES": str(tmp.parent)}
    git = shutil.which("git")
    if git is not None and not fuzz:
        command = [git, "apply", "--whitespace=nowarn", str(patch)]
    elif shutil.which("patch") is not None:
        command = ["patch", "-p1", "--batch", "--silent", "--no-backup-if-mismatch",
                   f"--fuzz={3 if fuzz else 0}", "-i", str(patch)]
    else:
        raise MutantError("applying a mutant needs git or patch on PATH")
    proc = subprocess.run(command, cwd=tmp, env=env, capture_output=True, text=True,
                          check=False)
    return tmp / rel if proc.returncode == 0 else None


def _environ() -> dict[str, str]:
    """A copy of the environment, whole even while another thread changes it (pytest removes
    PYTEST_CURRENT_TEST after each test while the suite makes mutants in threads)."""
    while True:
        try:
            return dict(os.environ)
        except KeyError:  # gone between listing the names and reading its value
            continue


def make_patch(exercise: catalog.Exercise, edited_text: str, header: str) -> str:
    """A mutant file's text: `header`, a blank line, the diff from the reference to the edit."""
    ref = f"solutions/{exercise.name}.py"
    original = exercise.solution.read_text(encoding="utf-8").splitlines(keepends=True)
    diff = "".join(difflib.unified_diff(original, edited_text.splitlines(keepends=True),
                                        f"a/{ref}", f"b/{ref}"))
    if not diff:
        raise MutantError("the edited file is identical to the reference: no bug to record")
    bad = [line for line in header.splitlines() if line.startswith(("---", "+++", "@@", "diff "))]
    if bad:
        raise MutantError(f"a header line may not start like a diff: {bad[0]!r}")
    return f"{header.strip()}\n\n{diff}"


def refresh(mutant: Mutant) -> str:
    """Re-derive the patch against today's reference (fuzzy apply, then a fresh diff).

    Returns what happened, in a line; raises `MutantError` when even a fuzzy apply fails.
    """
    exercise = catalog.Exercise(mutant.exercise)
    with tempfile.TemporaryDirectory(prefix="mutant-") as tmp:
        if _apply(Path(tmp) / "exact", exercise.solution, mutant.patch, fuzz=False) is not None:
            return f"{mutant.label}: applies as it is"
        patched = _apply(Path(tmp) / "fuzzy", exercise.solution, mutant.patch, fuzz=True)
        if patched is None:
            raise MutantError(
                f"{_rel(mutant.patch)} does not apply even with fuzz: show it against an old "
                f"reference (`git log -p solutions/{exercise.name}.py`), redo the bug on today's "
                f"reference and record it with `python -m grading.mutants make "
                f"{exercise.name} {mutant.bug} EDITED.py`")
        text = make_patch(exercise, patched.read_text(encoding="utf-8"), mutant.header)
    mutant.patch.write_text(text, encoding="utf-8")
    return f"{mutant.label}: re-derived; check that the diff still shows one bug"


def _rel(path: Path) -> str:
    with contextlib.suppress(ValueError):
        return str(path.relative_to(catalog.ROOT))
    return str(path)


# ---- command line ---------------------------------------------------------------------------

_EXAMPLES = """\
examples:
  python -m grading.mutants list token_bucket
  python -m grading.mutants show token_bucket no_lock > /tmp/no_lock.py
  cp solutions/billing.py /tmp/b.py; $EDITOR /tmp/b.py
  python -m grading.mutants make billing half_even /tmp/b.py   then edit the header it wrote
  python -m grading.mutants refresh billing                    after changing the reference

Grade one as a candidate's answer: python grader.py NAME --mutant BUG
"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise MutantError(f"{message} (see --help)")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="python -m grading.mutants", epilog=_EXAMPLES,
                     description="Mutants are one-bug patches against a reference solution.",
                     formatter_class=argparse.RawDescriptionHelpFormatter)
    verbs = parser.add_subparsers(dest="verb", required=True)
    listing = verbs.add_parser("list", help="every mutant with its summary")
    listing.add_argument("names", nargs="*", metavar="NAME")
    show = verbs.add_parser("show", help="print the mutant as a whole module")
    show.add_argument("name", metavar="NAME")
    show.add_argument("bug", metavar="BUG")
    make = verbs.add_parser("make", help="write tests/mutants/NAME/BUG.diff from an edited copy")
    make.add_argument("name", metavar="NAME")
    make.add_argument("bug", metavar="BUG")
    make.add_argument("edited", metavar="EDITED.py", type=Path)
    again = verbs.add_parser("refresh", help="re-derive patches against today's reference")
    again.add_argument("name", metavar="NAME")
    again.add_argument("bugs", nargs="*", metavar="BUG")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    try:
        args = _parser().parse_args(argv)
        return _dispatch(args)
    except (MutantError, catalog.UnknownExercise) as exc:
        print(f"mutants: {exc}", file=sys.stderr)
        return 2


def _dispatch(args: argparse.Namespace) -> int:
    if args.verb == "list":
        names = args.names or [e.name for e in catalog.exercises()]
        for name in names:
            for mutant in of(catalog.find(name)):
                print(f"{mutant.label:45} {mutant.summary}")
        return 0
    exercise = catalog.find(args.name)
    if args.verb == "show":
        with tempfile.TemporaryDirectory() as tmp:
            path = materialize(find(exercise, args.bug), Path(tmp) / "m.py")
            sys.stdout.write(path.read_text(encoding="utf-8"))
        return 0
    if args.verb == "make":
        if not args.edited.is_file():
            raise MutantError(f"no such file: {args.edited}")
        target = catalog.MUTANTS / exercise.name / f"{args.bug}.diff"
        header = (Mutant(exercise.name, args.bug, target).header if target.is_file() else
                  "ONE LINE: what the bug is.\n\nWhy candidates write it.\n\n"
                  "Caught by: test_the_hidden_check_that_fails")
        text = make_patch(exercise, args.edited.read_text(encoding="utf-8"), header)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
        print(f"wrote {_rel(target)}; edit its header, then "
              f"`python grader.py {exercise.name} --mutant {args.bug}`", file=sys.stderr)
        return 0
    bugs = args.bugs or [m.bug for m in of(exercise)]
    failed = 0
    for bug in bugs:
        try:
            print(refresh(find(exercise, bug)))
        except MutantError as exc:
            print(f"mutants: {exc}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
