"""Diagnosis by signature: which known bug a submission behaves like.

A mutant's signature is the set of checks it fails when graded in full (`grading.signatures`
stores them). The rule: a known bug is named when the submission fails every check of its
signature *and* passes at least `ALIKE` of the checks the bug passes, so a submission that fails
nearly everything (the unmodified stub, an import error, another exercise's file) is named no
bug. The first diagnosis is the match that explains the most failures (the largest signature;
ties by name). A second is shown only when it explains failures the first does not (two bugs at
once): the match covering the most of those. A guess would mislead more than silence.

Standard library only (the grader's parent process imports this).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from grading import catalog
from grading.signatures import is_current, stored

SHOWN = 2  # diagnoses a report shows at most


@dataclass(frozen=True)
class Diagnosis:
    bug: str
    summary: str
    rule: str  # the statement's rule it breaks, from the patch's `Rule:` line ("" if none)
    explains: int  # how many of the submission's failures its signature covers


# The share of the checks a known bug passes that a submission must pass too before the bug is
# named: a wrong answer that is the bug passes them all; one that fails for other reasons too
# (most of all, one that passes nothing) is not said to be it.
ALIKE = 0.8


def diagnose(exercise: catalog.Exercise, failed: Iterable[str],
             passed: Iterable[str]) -> list[Diagnosis]:
    """The known bugs the submission behaves like, best first.

    A bug is named only when the submission fails every check the bug fails (its signature)
    *and* passes at least `ALIKE` of the checks the bug passes: a submission that fails nearly
    everything (the unmodified stub, one that cannot be imported, a file for another exercise)
    contains every signature and behaves like none of them. Empty when the stored signatures
    are missing or stale (a stale signature could name the wrong bug), or when nothing failed.
    """
    failures, passes = set(failed), set(passed)
    data = stored(exercise)
    if not failures or not passes or data is None or not is_current(exercise):
        return []
    every = set(data.get("costs", {})) | failures | passes
    found = []
    for bug, entry in data.get("mutants", {}).items():
        signature = set(entry.get("fails", ()))
        alike = every - signature
        if (signature and signature <= failures
                and len(alike & passes) >= ALIKE * len(alike)):
            found.append(Diagnosis(bug, entry.get("summary", bug), entry.get("rule", ""),
                                   len(signature)))
    found.sort(key=lambda d: (-d.explains, d.bug))
    if not found:
        return []
    signatures = {bug: set(entry.get("fails", ())) for bug, entry in data["mutants"].items()}
    left = failures - signatures[found[0].bug]
    more = sorted(((len(signatures[d.bug] & left), d) for d in found[1:]
                   if signatures[d.bug] & left), key=lambda pair: (-pair[0], pair[1].bug))
    return [found[0], *(d for _, d in more)]


if __name__ == "__main__":  # the command's former name: `python -m grading.signatures`
    from grading.signatures import main

    raise SystemExit(main())
