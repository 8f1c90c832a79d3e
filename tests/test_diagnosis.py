"""Diagnosis by signature: stored signatures are current, and a mutant graded as a submission
names itself (or a mutant with the very same signature) as the first diagnosis."""

from __future__ import annotations

import pytest

from grading import catalog, diagnose, signatures
from tests.helpers import EXERCISES, SUMMARY

_TARGET = 0.95  # the share of mutants that must diagnose themselves first


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
def test_stored_signatures_match_the_checks_reference_and_patches(
        exercise: catalog.Exercise) -> None:
    data = signatures.stored(exercise)
    assert data is not None, (f"no stored signatures for {exercise.name}: run "
                              f"`uv run python -m grading.signatures refresh {exercise.name}`")
    assert signatures.is_current(exercise), (
        f"the signatures of {exercise.name} are stale (its checks, reference or patches "
        f"changed): run `uv run python -m grading.signatures refresh {exercise.name}`")
    assert set(data["mutants"]) == {p.stem for p in exercise.mutants}


def test_mutants_diagnose_themselves() -> None:
    named, total, misses = 0, 0, []
    for exercise in EXERCISES:
        data = signatures.stored(exercise)
        if data is None or not signatures.is_current(exercise):
            continue  # the test above fails for it, naming the command
        fails = {bug: frozenset(e["fails"]) for bug, e in data["mutants"].items()}
        every = frozenset(data["costs"])
        for bug, signature in fails.items():
            total += 1
            found = diagnose.diagnose(exercise, signature, every - signature)
            if found and found[0].bug == bug:
                named += 1
            elif found and fails[found[0].bug] == signature:
                named += 1  # a tie: two mutants no check tells apart
                SUMMARY.append(f"diagnosis tie: {exercise.name}/{bug} = {found[0].bug}")
            else:
                misses.append(f"{exercise.name}/{bug} -> "
                              f"{found[0].bug if found else 'nothing'}")
    assert total, "no current signatures to test"
    rate = named / total
    SUMMARY.append(f"mutant self-diagnosis: {named}/{total} ({rate:.0%}); misses: "
                   f"{', '.join(misses) or 'none'}")
    assert rate >= _TARGET, f"only {rate:.0%} of mutants diagnose themselves: {misses}"


def test_a_passing_grade_has_no_diagnosis() -> None:
    exercise = next(e for e in EXERCISES if signatures.is_current(e))
    every = signatures.stored(exercise)["costs"]  # type: ignore[index]
    assert diagnose.diagnose(exercise, [], every) == []


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
def test_a_submission_that_passes_nothing_is_named_no_bug(exercise: catalog.Exercise) -> None:
    """The unmodified stub, a syntax error, an import error or another exercise's file fails
    every check: it contains every signature, and behaves like no known bug."""
    data = signatures.stored(exercise)
    if data is None or not signatures.is_current(exercise):
        pytest.skip("stale signatures: the test above names the command")
    assert diagnose.diagnose(exercise, data["costs"], []) == []


@pytest.mark.parametrize("exercise", EXERCISES, ids=lambda e: e.name)
def test_a_submission_failing_a_bugs_checks_and_many_more_is_named_no_bug(
        exercise: catalog.Exercise) -> None:
    """Failing a known bug's checks and also half of the rest is another answer, not that bug."""
    data = signatures.stored(exercise)
    if data is None or not signatures.is_current(exercise):
        pytest.skip("stale signatures: the test above names the command")
    every = sorted(data["costs"])
    for bug, entry in data["mutants"].items():
        fails = set(entry["fails"])
        rest = [c for c in every if c not in fails]
        half = set(rest[::2])
        named = [d.bug for d in diagnose.diagnose(exercise, fails | half, set(rest) - half)]
        assert bug not in named or not rest, f"{bug} named for a submission failing far more"


def test_costs_are_retimed_only_over_current_signatures(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    """`costs` keeps the stored signatures, so it refuses stale ones and names the refresh."""
    monkeypatch.setattr(signatures, "is_current", lambda exercise: False)
    assert signatures.main(["costs", "token_bucket"]) == 1
    assert "refresh them first: python -m grading.signatures refresh token_bucket" in (
        capsys.readouterr().err)
    with pytest.raises(ValueError, match="stale"):
        signatures.retime(catalog.find("token_bucket"))
    assert signatures.main(["costs", "no_such_kata"]) == 2
