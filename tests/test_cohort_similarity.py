"""Copies, flagged: a disguised copy of the reference is; independent correct answers (written
from the statement alone by red-team reviewers) are not; the stub's code counts for nothing."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from grading import catalog, cohort_files, similarity
from tests import cohort_helpers as h
from tests.helpers import SUMMARY

EXERCISES = [e.name for e in catalog.exercises()]
# Correct answers written from each statement alone (docs/cohort.md): read, never changed.
INDEPENDENT = (Path("/work/redteam"), Path("/work/rt2"))


def _independent(name: str) -> dict[str, str]:
    return {root.name: path.read_text(encoding="utf-8") for root in INDEPENDENT
            if (path := root / name / "round" / "correct.py").is_file()}


@pytest.mark.parametrize("name", EXERCISES)
def test_a_copy_of_the_reference_renamed_and_stripped_is_flagged(name: str) -> None:
    copy = h.disguise(h.reference(name))
    assert copy != h.reference(name)
    pairs = similarity.flagged(catalog.Exercise(name), {"copier": copy})
    assert [(p.a, p.b) for p in pairs] == [("copier", similarity.REFERENCE)], pairs
    assert pairs[0].fragments, "a flagged pair shows what it shares"


@pytest.mark.parametrize("name", EXERCISES)
def test_the_stub_alone_shares_nothing_with_the_reference(name: str) -> None:
    exercise = catalog.Exercise(name)
    stub = exercise.stub.read_text(encoding="utf-8")
    pairs = similarity.scores(exercise, {"stub": stub})
    assert pairs[0].similarity < 0.1, pairs[0]


def test_two_answers_alike_only_in_names_are_flagged_as_a_pair() -> None:
    text = h.reference("token_bucket")
    pairs = similarity.flagged(catalog.Exercise("token_bucket"),
                               {"ann": text, "ben": h.disguise(text)})
    assert ("ann", "ben") in [(p.a, p.b) for p in pairs], pairs


def test_independent_correct_answers_are_not_flagged() -> None:
    """The false-positive rate over every pair of independent correct answers, and each
    against the reference: none may be flagged."""
    compared = flagged = 0
    for name in EXERCISES:
        answers = _independent(name)
        if not answers:
            continue
        pairs = similarity.scores(catalog.Exercise(name), answers)
        compared += len(pairs)
        flagged += sum(p.similarity >= similarity.THRESHOLD for p in pairs)
        highest = max(p.similarity for p in pairs)
        SUMMARY.append(f"similarity: {name}: independent answers at most {highest:.2f}")
    if not compared:
        pytest.skip(f"no independent correct answers here ({', '.join(map(str, INDEPENDENT))})")
    SUMMARY.append(f"similarity: {flagged} of {compared} independent pairs flagged")
    assert flagged == 0, f"{flagged} of {compared} pairs of independent answers flagged"


def test_a_file_that_does_not_tokenize_is_compared_as_text() -> None:
    pairs = similarity.scores(catalog.Exercise("interval_union"), {"broken": "def f(:\n  '''"})
    assert pairs[0].similarity < similarity.THRESHOLD


def test_without_copydetect_the_copies_are_said_to_be_not_searched(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "copydetect", None)  # an import of it now fails
    found = cohort_files.copies([catalog.Exercise("interval_union")],
                                {"interval_union": {"ann": "x = 1\n"}})
    assert found["pairs"] == [] and "copies not searched" in found["skipped"], found
