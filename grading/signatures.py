"""The signature store: what each known bug fails, and what each check costs the reference.

Every mutant has a signature: the set of checks it fails when graded in full. The signatures of
an exercise are stored in `grading/signatures/NAME.json` with a digest of everything that decides
them (the test files, the reference, the patches, the plugin) and a digest of the checks alone
(what a Gradescope image, which holds no reference, compares); the repository's suite fails when
a stored digest no longer matches, naming the command that recomputes them:

    python -m grading.signatures refresh [NAME...]

The same file keeps what each check cost the reference (its least seconds over three full
gradings, measured by `refresh` before the mutants are graded, or alone by `costs`): the grader
deals checks to its children by these, and bounds each check's time by them (`limits.bounded`).
Load only ever adds time, so the least of three is the figure nearest the check's own cost; a
refresh run beside other work still deals unevenly, and `costs` on an idle machine mends that
without grading the mutants again.

Standard library only (the grader's parent process imports this).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from grading import catalog, files, mutants, provenance

STORE = Path(__file__).resolve().parent / "signatures"
_COST_ROUNDS = 3  # full gradings of the reference whose least seconds per check are stored


def digest(exercise: catalog.Exercise) -> str:
    """sha256 of every file that decides the signatures of `exercise`."""
    return files.digest([*exercise.grading_files, exercise.solution, *exercise.mutants])


def _path(exercise: catalog.Exercise) -> Path:
    return STORE / f"{exercise.name}.json"


def stored(exercise: catalog.Exercise) -> dict[str, Any] | None:
    """The stored signatures of `exercise`, or None when absent or unreadable."""
    try:
        data = json.loads(_path(exercise).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def costs(exercise: catalog.Exercise) -> dict[str, float]:
    """Seconds the reference spent on each check of `exercise` (by check id) when its signatures
    were last refreshed; empty when none are stored. The dealing of checks to children reads
    them, and each check's time limit (`limits.bounded`: a multiple of the cost, with a floor,
    wide enough that a figure that is off costs time, never a result)."""
    data = stored(exercise) or {}
    raw = data.get("costs")
    if not isinstance(raw, dict):
        return {}
    return {str(cid): float(s) for cid, s in raw.items()
            if isinstance(s, int | float) and not isinstance(s, bool) and s >= 0}


def is_current(exercise: catalog.Exercise) -> bool:
    """The stored signatures were computed from today's files. Where the reference is absent
    (a Gradescope image), from today's checks: the reference and patches came with them."""
    data = stored(exercise)
    if data is None:
        return False
    if not exercise.solution.is_file():
        return data.get("checks") == provenance.checks_digest(exercise)
    return data.get("digest") == digest(exercise)


def measure(exercise: catalog.Exercise) -> dict[str, float]:
    """The seconds each check of `exercise` costs the reference: the least of `_COST_ROUNDS`
    full gradings, one at a time (the figures are for a grading alone)."""
    from grading import collect, sandbox  # not at the top: a plain grading skips this

    checks = collect.collect(exercise)
    seconds: dict[str, list[float]] = {}
    for _ in range(_COST_ROUNDS):
        for result in sandbox.grade(exercise, exercise.solution, checks):
            seconds.setdefault(result.check.id, []).append(result.duration)
    return {cid: round(min(times), 3) for cid, times in sorted(seconds.items())}


def refresh(exercise: catalog.Exercise, jobs: int = 2) -> Path:
    """Time the reference on every check, then grade every mutant of `exercise` in full (its
    checks dealt by those times), and store both."""
    from grading import collect, sandbox

    measured = measure(exercise)
    checks = collect.with_costs(collect.collect(exercise), measured)
    all_mutants = mutants.of(exercise)

    def signature(mutant: mutants.Mutant) -> tuple[mutants.Mutant, list[str]]:
        path = mutants.materialize(mutant)
        results = sandbox.grade(exercise, path, checks)
        return mutant, sorted(r.check.id for r in results if r.status != "passed")

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        graded = list(pool.map(signature, all_mutants))
    data = {
        "digest": digest(exercise),
        "checks": provenance.checks_digest(exercise),
        "costs": measured,
        "mutants": {
            m.bug: {"summary": m.summary, "rule": _rule(m), "fails": fails}
            for m, fails in graded
        },
    }
    return _write(exercise, data)


def retime(exercise: catalog.Exercise) -> Path:
    """Measure the costs of `exercise` again and store them beside its current signatures."""
    data = stored(exercise)
    if data is None or not is_current(exercise):
        raise ValueError(f"the signatures of {exercise.name} are stale: refresh them instead")
    data["costs"] = measure(exercise)
    return _write(exercise, data)


def _write(exercise: catalog.Exercise, data: dict[str, Any]) -> Path:
    STORE.mkdir(exist_ok=True)
    path = _path(exercise)
    path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return path


def _rule(mutant: mutants.Mutant) -> str:
    return next((line.split(":", 1)[1].strip() for line in mutant.header.splitlines()
                 if line.startswith("Rule:")), "")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m grading.signatures",
        description="Recompute the stored mutant signatures (grades every mutant in full) "
                    "and what each check costs the reference (three gradings of it).")
    parser.add_argument("verb", choices=("refresh", "costs", "check"),
                        help="refresh: recompute both; costs: time the reference again and "
                             "keep the signatures (on an idle machine, after a refresh beside "
                             "other work); check: say which stored ones are stale")
    parser.add_argument("names", nargs="*", metavar="NAME", help="exercises (default: all)")
    parser.add_argument("--jobs", type=int, default=2, help="mutants graded at once")
    args = parser.parse_intermixed_args(argv)
    try:
        chosen = [catalog.find(n) for n in args.names] or catalog.exercises()
    except catalog.UnknownExercise as exc:
        print(f"signatures: {exc}", file=sys.stderr)
        return 2
    stale = [e for e in chosen if not is_current(e)]
    if args.verb == "check":
        for exercise in stale:
            print(f"stale: {exercise.name}")
        return 1 if stale else 0
    if args.verb == "costs" and stale:
        names = " ".join(e.name for e in stale)
        print(f"signatures: stale, refresh them first: python -m grading.signatures refresh "
              f"{names}", file=sys.stderr)
        return 1
    for i, exercise in enumerate(chosen, 1):
        if args.verb == "costs":
            print(f"signatures: [{i}/{len(chosen)}] {exercise.name}: timing the reference",
                  file=sys.stderr, flush=True)
            path = retime(exercise)
        else:
            count = len(exercise.mutants)
            print(f"signatures: [{i}/{len(chosen)}] {exercise.name}: grading {count} mutants",
                  file=sys.stderr, flush=True)
            path = refresh(exercise, max(1, args.jobs))
        print(f"signatures: wrote {path.relative_to(catalog.ROOT)}", file=sys.stderr, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
