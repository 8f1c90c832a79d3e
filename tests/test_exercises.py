"""Every exercise, discovered from the layout: the reference earns full marks, the stub earns
nothing, every mutant patch applies and loses the checks its header names, and every part is
where it belongs."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from grading import catalog, margins, mutants, signatures
from tests.helpers import EXERCISES, ROOT, caught_by, checks_of, describe, grade

_SPECS = ROOT.parent / "shared" / "specs"
_LONGEST = 450  # lines in one hidden test file: the house limit is ~400

_REFERENCES = [pytest.param((e.name, e.solution, ()), id=e.name) for e in EXERCISES]
_STUBS = [pytest.param((e.name, e.stub, ()), id=e.name) for e in EXERCISES]
_MUTANTS = [
    pytest.param((e.name, m, tuple(caught_by(m))), id=f"{e.name}-{m.stem}")
    for e in EXERCISES for m in e.mutants
]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("job", _REFERENCES)
def test_reference_earns_full_marks(job: tuple[str, Path, tuple[str, ...]]) -> None:
    results = grade(*job)
    failed = [r for r in results if r.status != "passed"]
    assert not failed, f"the reference of {job[0]} fails:\n{describe(failed)}"
    low = [row for row in margins.rows_of(job[0], "reference", results) if not row.ok]
    assert not low, ("the reference is within a 2x margin of a measuring check's limit (a "
                     f"verdict another machine could turn): {low}")


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("job", _STUBS)
def test_stub_earns_nothing_and_every_check_fails_cleanly(
        job: tuple[str, Path, tuple[str, ...]]) -> None:
    results = grade(*job)
    passed = [r for r in results if r.status == "passed"]
    assert not passed, f"the stub of {job[0]} passes checks:\n{describe(passed)}"
    unclean = [r for r in results if r.status not in ("failed", "error") or not r.message]
    assert not unclean, (f"checks of {job[0]} should fail on the stub with a message, not hang "
                         f"or crash:\n{describe(unclean)}")


@pytest.mark.parametrize("patch", [m for e in EXERCISES for m in e.mutants],
                         ids=lambda p: f"{p.parent.name}-{p.stem}")
def test_mutant_patch_applies_to_todays_reference(patch: Path, tmp_path: Path) -> None:
    mutant = mutants.Mutant(patch.parent.name, patch.stem, patch)
    assert mutant.summary != mutant.bug, f"{patch.name} has no header line saying what the bug is"
    try:
        path = mutants.materialize(mutant, tmp_path / f"{mutant.exercise}.py")
    except mutants.MutantError as exc:
        pytest.fail(str(exc))
    reference = catalog.Exercise(mutant.exercise).solution.read_text(encoding="utf-8")
    assert path.read_text(encoding="utf-8") != reference, f"{patch.name} changes nothing"


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("job", _MUTANTS)
def test_mutant_is_caught_by_the_checks_it_names(job: tuple[str, Path, tuple[str, ...]]) -> None:
    name, mutant, named = job
    assert named, f"{mutant.name} names no check (a 'Caught by: test_...' line)"
    hidden = {c.id.split("::", 1)[1].split("[")[0] for c in checks_of(name)
              if c.visibility == "hidden"}
    unknown = [n for n in named if n not in hidden]
    assert not unknown, f"{mutant.name} names checks that are not hidden checks: {unknown}"
    results = grade(*job)
    survived = [r for r in results if r.status == "passed"]
    assert not survived, f"{mutant.name} survives:\n{describe(survived)}"
    # Caught by a growth measurement: then by the margin, so that another machine catches it
    # too (constant-factor ratios are shown by `python -m grading.margins`, not held to it).
    low = [row for row in margins.rows_of(name, mutant.stem, results)
           if row.growth and row.figure >= row.limit and not row.ok]
    assert not low, f"{mutant.name} is caught by less than a 2x margin: {low}"
    assert results, f"no check of {named} was run against {mutant.name}"
    stored = signatures.stored(catalog.Exercise(name))
    if stored is not None and signatures.is_current(catalog.Exercise(name)):
        signature = set(stored["mutants"].get(mutant.stem, {}).get("fails", ()))
        absent = [r.check.id for r in results if r.check.id not in signature]
        assert not absent, f"the stored signature of {mutant.name} lacks {absent}"


# Grading is deterministic: every reference and every mutant is graded three times in all (the
# tests above are the first time) and no check's outcome, nor hypothesis's falsifying example,
# may move. A mutant is regraded on the checks its header names, as it was graded above.
# Round by round: the second grading of everything, then the third, so that two gradings of the
# same submission (a mutant that waits out a time limit, say) do not run side by side.
_TIMES = 3
_REGRADES = [
    pytest.param((name, path, only, again), id=f"{label}-{again + 1}")
    for again in range(1, _TIMES)
    for name, path, only, label in [
        *((e.name, e.solution, (), f"{e.name}-reference") for e in EXERCISES),
        *((e.name, m, tuple(caught_by(m)), f"{e.name}-{m.stem}")
          for e in EXERCISES for m in e.mutants),
    ]
]


@pytest.mark.slow
@pytest.mark.timeout(900)
@pytest.mark.parametrize("job", _REGRADES)
def test_regrading_gives_the_same_outcome(job: tuple[str, Path, tuple[str, ...], int]) -> None:
    name, path, only, again = job
    first = {r.check.id: (r.status, r.falsifying) for r in grade(name, path, only)}
    later = {r.check.id: (r.status, r.falsifying) for r in grade(name, path, only, again)}
    assert first.keys() == later.keys()
    changed = {cid: (first[cid], later[cid]) for cid in first if first[cid] != later[cid]}
    assert not changed, f"{path.name}: grading #{again + 1} differs from the first: {changed}"


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
def test_exercise_has_every_part(exercise: catalog.Exercise) -> None:
    for part in (exercise.statement, exercise.stub, exercise.visible_tests, exercise.solution,
                 exercise.notes):
        assert part.is_file(), f"{exercise.name} lacks {part.relative_to(ROOT)}"
    hidden = exercise.hidden.relative_to(ROOT)
    tests = [p for p in exercise.hidden_files if p.name.startswith("test_")]
    assert tests, f"{exercise.name} has no hidden test files in {hidden}/"
    # Module names stay unique across the repository (mypy checks every folder in one pass).
    odd = [p.name for p in exercise.hidden_files
           if p not in catalog.SHARED and p.name != f"{exercise.name}_helpers.py"
           and not p.name.startswith(f"test_{exercise.name}_")]
    assert not odd, (f"{hidden}/ holds {odd}: name test files test_{exercise.name}_<topic>.py "
                     f"and the helpers module {exercise.name}_helpers.py")
    long = [f"{p.name} ({n} lines)" for p in exercise.hidden_files
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > _LONGEST]
    assert not long, f"{hidden}/: split these by topic: {long}"
    assert exercise.mutants, f"{exercise.name} has no mutants under tests/mutants/"
    strays = sorted(p.name for p in (catalog.MUTANTS / exercise.name).glob("*")
                    if p.suffix != ".diff")
    assert not strays, f"tests/mutants/{exercise.name}/ holds non-patches: {strays}"
    assert exercise.difficulty in ("easy", "medium", "hard"), (
        f"{exercise.statement.relative_to(ROOT)} needs a line "
        "'Difficulty: easy|medium|hard · Time: NN minutes'")
    assert exercise.minutes, f"{exercise.name}: no time estimate in the statement"


def _public_names(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    names: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
        elif isinstance(node, ast.Assign):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return {n for n in names if not n.startswith("_") and n != "__all__"}


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
def test_stub_and_reference_have_the_same_public_names(exercise: catalog.Exercise) -> None:
    stub, solution = _public_names(exercise.stub), _public_names(exercise.solution)
    assert stub == solution, (f"{exercise.name}: only in the stub {sorted(stub - solution)}, "
                              f"only in the reference {sorted(solution - stub)}")


_API_NAME = re.compile(r"^(?:class|def|async def)\s+(\w+)|^(\w+)\s*[:=]", re.MULTILINE)


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
def test_spec_names_import_from_stub_and_reference(exercise: catalog.Exercise) -> None:
    spec = _SPECS / f"{exercise.name}.md"
    if not spec.is_file():
        pytest.skip(f"no spec beside the repository at {spec}")
    blocks = re.findall(r"```python\n(.*?)```", spec.read_text(encoding="utf-8"), re.DOTALL)
    wanted = {a or b for block in blocks for a, b in _API_NAME.findall(block)}
    assert wanted, f"no API names found in {spec}"
    for path in (exercise.stub, exercise.solution):
        missing = wanted - _public_names(path)
        assert not missing, f"{path.relative_to(ROOT)} lacks the spec's names {sorted(missing)}"


def test_readme_lists_every_exercise() -> None:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    listed = set(re.findall(r"^\| \[?`?(\w+)`?\]?", readme, re.MULTILINE))
    missing = [e.name for e in EXERCISES if e.name not in listed]
    assert not missing, f"README.md's exercise table lacks {missing}"


def _graded_table(statement: str) -> dict[str, float]:
    """Points by category from the statement's "What is graded" table."""
    section = statement.split("## What is graded", 1)[-1].split("\n## ", 1)[0]
    points: dict[str, float] = {}
    for line in section.splitlines():
        cells = [c.strip().strip("*`") for c in line.strip().strip("|").split("|")]
        category = cells[0].lower().replace(" ", "_") if cells else ""
        numbers = [c for c in cells[1:] if c.isdigit()]
        if category in ("correctness", "edge_cases", "bad_input", "concurrency", "performance") \
                and len(numbers) == 1:
            points[category] = float(numbers[0])
    return points


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
def test_statement_points_match_the_checks(exercise: catalog.Exercise) -> None:
    stated = _graded_table(exercise.statement.read_text(encoding="utf-8"))
    actual: dict[str, float] = {}
    for check in checks_of(exercise.name):
        actual[check.category] = actual.get(check.category, 0.0) + check.points
    assert stated == actual, (f"{exercise.statement.relative_to(ROOT)} says {stated} under "
                              f"'What is graded'; the checks carry {actual}")


def test_the_measuring_module_and_the_margins_report_agree_on_the_margin() -> None:
    import importlib.util

    spec = importlib.util.spec_from_file_location("kata_measure", catalog.SHARED[0])
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.MARGIN == margins.MARGIN
