"""What a command line asks to grade, resolved: the submissions and the checks.

`cli` parses, `run` grades; both take their inputs and the usage error from here, so neither
imports the other at the top. Standard library only.
"""

from __future__ import annotations

import argparse
import ast
import difflib
import fnmatch
import glob
import os
import sys
from pathlib import Path
from typing import NoReturn

from grading import catalog
from grading.request import GradeRequest
from grading.results import Check

_SHOWN = 4  # the most candidates an ambiguous --check prefix names
_LISTED = 20  # the most files a "nothing was graded" message names


class UsageError(Exception):
    """Bad usage: reported as one line on stderr, exit status 2."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are a `UsageError` (one line, exit 2), not argparse's
    usage block and exit: the grader's, the mutation runner's and the bench's command lines."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{message} (see --help)")


def submissions(exercise: catalog.Exercise, request: GradeRequest) -> list[Path]:
    """The files to grade for `exercise`, each checked to exist."""
    if request.reference:
        return [exercise.solution]
    if request.mutants:
        return _mutants(exercise, list(request.mutants))
    if not request.submissions:
        return [exercise.stub]
    found: list[Path] = []
    for spec in request.submissions:
        path = Path(spec).expanduser()
        if path.is_dir():
            found.extend(sorted(p for p in path.glob("*.py") if p.is_file()))
        elif any(ch in spec for ch in "*?["):
            found.extend(sorted(Path(p) for p in glob.glob(os.path.expanduser(spec))))
        elif path.is_file():
            found.append(path)
        else:
            raise UsageError(f"no such file: {spec}")
    if not found:
        raise UsageError(f"no .py files in {', '.join(request.submissions)}")
    return found


def _mutants(exercise: catalog.Exercise, bugs: list[str]) -> list[Path]:
    from grading import mutants
    try:
        chosen = (mutants.of(exercise) if "all" in bugs
                  else [mutants.find(exercise, bug) for bug in bugs])
        if not chosen:
            raise UsageError(f"{exercise.name} has no mutants")
        return [mutants.materialize(m) for m in chosen]
    except mutants.MutantError as exc:
        raise UsageError(str(exc)) from None


def select(checks: list[Check], wanted: list[str] | None, exercise: catalog.Exercise,
           *, visible_only: bool = False) -> list[Check]:
    """The checks `--check` names (and only the visible ones with `--visible`).

    Each name is a check id (`hidden::test_x[p]`), a test function name (`test_x`, every
    parameter), a glob (`test_refill_*`) or a prefix that names one test function.
    """
    pool = [c for c in checks if c.visibility == "visible"] if visible_only else checks
    if not wanted:
        return pool
    chosen: list[Check] = []
    for name in wanted:
        hits = _matching(pool, name)
        if not hits:
            where = " visible" if visible_only else ""
            close = difflib.get_close_matches(name, sorted({_function(c) for c in pool}), n=2)
            hint = f"; did you mean {' or '.join(close)}?" if close else ""
            raise UsageError(f"{exercise.name} has no{where} check {name!r}{hint}")
        chosen.extend(c for c in hits if c not in chosen)
    return chosen


def _function(check: Check) -> str:
    return check.id.split("::", 1)[1].split("[")[0]


def _matching(checks: list[Check], name: str) -> list[Check]:
    exact = [c for c in checks if name in (c.id, c.id.split("::", 1)[1], _function(c))]
    if exact:
        return exact
    if any(ch in name for ch in "*?["):
        return [c for c in checks if fnmatch.fnmatchcase(_function(c), name)
                or fnmatch.fnmatchcase(c.id.split("::", 1)[1], name)]
    functions = sorted({_function(c) for c in checks if _function(c).startswith(name)})
    if len(functions) > 1:
        shown = ", ".join(functions[:_SHOWN]) + (", ..." if len(functions) > _SHOWN else "")
        raise UsageError(f"--check {name!r} is a prefix of {len(functions)} checks ({shown}); "
                         "give more of the name, or a glob such as 'test_x*'")
    return [c for c in checks if functions and _function(c) == functions[0]]


def unfit(exercise: catalog.Exercise, path: Path) -> str:
    """Why `path` cannot be graded as `exercise` ("" when it can): not Python source, a syntax
    error, the unmodified stub, or missing public names the checks import. Said once, before
    any check runs, instead of once per check."""
    parsed = _parse(path)
    if isinstance(parsed, str):
        return parsed
    data, tree = parsed
    stub = exercise.stub.read_bytes()
    if data == stub:
        return "not started: this is the unmodified stub"
    defined = _defined_names(tree)
    missing = sorted(_public_names(ast.parse(stub)) - defined) if defined is not None else []
    if missing:
        return f"missing names: {', '.join(missing)} (is it a file of another exercise?)"
    return ""


def _parse(path: Path) -> tuple[bytes, ast.Module] | str:
    """The file's bytes and syntax tree, or why it is not Python source."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        return f"cannot read it: {exc.strerror}"
    if b"\0" in data:
        return "not a Python source file (NUL bytes: a zip or a binary?)"
    try:
        return data, ast.parse(data.decode("utf-8"), filename=path.name)
    except UnicodeDecodeError:
        return "not a Python source file (not UTF-8 text)"
    except SyntaxError as exc:
        return f"syntax error at line {exc.lineno}: {exc.msg}"


def _public_names(tree: ast.Module) -> set[str]:
    """The stub's public top-level classes and functions: what the checks import."""
    return {node.name for node in tree.body
            if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and not node.name.startswith("_")}


def _defined_names(tree: ast.Module) -> set[str] | None:
    """Every name a module binds anywhere (None after a star import: it may bind anything)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.alias):
            if node.name == "*":
                return None
            names.add((node.asname or node.name).split(".")[0])
    return names


def returned_file(folder: Path, name: str) -> Path | str:
    """The file to grade as exercise `name` in a returned `folder` (the rule Gradescope's
    `run_autograder` and `grader.py cohort` share): `NAME.py` at the top of it, else the one
    `NAME.py` anywhere in it, else its only `.py` file; otherwise why none, naming what was
    found (a string)."""
    files = sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*")
                   if p.is_file() and not p.is_symlink())
    found = [f for f in files if f.endswith(".py")]
    exact = [f for f in found if f == f"{name}.py" or f.endswith(f"/{name}.py")]
    if f"{name}.py" in exact:
        return folder / f"{name}.py"
    if len(exact) == 1:
        return folder / exact[0]
    if len(found) == 1:
        return folder / found[0]
    listed = ", ".join(files[:_LISTED]) or "no files"
    return (f"Nothing was graded: expected {name}.py (or exactly one .py file), found: "
            f"{listed}. Resubmit your solution as {name}.py.")


def main(argv: list[str]) -> int:
    """`python -m grading.inputs NAME FOLDER`: the path (relative to FOLDER) of the file to
    grade, on stdout; or why none, on stderr, with exit status 1 (for `run_autograder`)."""
    name, folder = argv
    chosen = returned_file(Path(folder), name)
    if isinstance(chosen, str):
        print(chosen, file=sys.stderr)
        return 1
    print(chosen.relative_to(folder).as_posix())
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
