"""The checks of an exercise: collected once from its stub (trusted code) in a child, cached,
and costed with what each cost the reference.

The check list (names, points, categories, limits) always comes from here, never from a
submission's run.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Iterable
from dataclasses import replace
from pathlib import Path

from grading import files, isolation
from grading.catalog import ROOT, Exercise
from grading.channel import ProtocolError
from grading.child import Run, run_child
from grading.limits import STUB_COLLECT_LIMIT, Limits
from grading.results import Check

CACHE = ROOT / ".grader" / "checks"


class GradingError(Exception):
    """The grader could not grade at all (e.g. the exercise's own test files do not collect)."""


def collect(exercise: Exercise, limits: Limits = Limits(),
            costs: dict[str, float] | None = None) -> list[Check]:
    """The checks of an exercise, collected with its stub, with `costs` (what each cost the
    reference: `signatures.costs`) where given.

    Cached in `.grader/checks/` under a hash of everything collection reads, so a repeat costs
    no child process.
    """
    return with_costs(_collected(exercise, limits), costs or {})


def with_costs(checks: Iterable[Check], costs: dict[str, float]) -> list[Check]:
    """`checks`, each with the cost it is dealt by: the seconds stored for it; the median of the
    stored ones for a check that has none yet (added since the last refresh); its time limit
    when the exercise has no costs stored at all."""
    if not costs:
        return [replace(c, cost=c.timeout) for c in checks]
    usual = statistics.median(costs.values())
    return [replace(c, cost=costs.get(c.id, usual), costed=c.id in costs) for c in checks]


def _collected(exercise: Exercise, limits: Limits) -> list[Check]:
    digest = files.digest([exercise.stub, *exercise.grading_files],
                          salt=f"{sys.version}|{limits.timeout}")
    cache = CACHE / f"{exercise.name}-{digest[:16]}.json"
    with contextlib.suppress(OSError, ValueError, TypeError, KeyError):
        return [Check(**c) for c in json.loads(cache.read_text(encoding="utf-8"))]
    checks = _collect(exercise, limits)
    with contextlib.suppress(OSError):
        files.write_atomic(cache, json.dumps([c.__dict__ for c in checks]).encode(),
                           stale=f"{exercise.name}-*.json")
    return checks


def _collect(exercise: Exercise, limits: Limits) -> list[Check]:
    # The stub is not held to a run's wall limit, nor to a submission's time to import.
    trusted = replace(limits, wall=STUB_COLLECT_LIMIT, collect=STUB_COLLECT_LIMIT)
    with tempfile.TemporaryDirectory(prefix="run-", dir=isolation.runs_dir()) as tmp:
        run = Run(exercise, exercise.stub, trusted, time.monotonic() + STUB_COLLECT_LIMIT,
                  Path(tmp))
        try:
            child = run_child(run, 0, {"mode": "collect"}, {})
        except ProtocolError as exc:
            raise GradingError(f"cannot collect the checks of {exercise.name}: {exc}") from None
    if child.collect_errors or not child.checks:
        detail = (child.collect_errors[0] if child.collect_errors else
                  f"no checks were collected ({child.ended})" if child.ended else
                  "no checks were collected")
        raise GradingError(f"cannot collect the checks of {exercise.name}: {detail}")
    return [
        Check(c["id"], c["name"], c["visibility"], c["category"], float(c["points"]),
              float(c["timeout"]), str(c.get("file", "")))
        for c in child.checks
    ]
