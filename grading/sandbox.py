"""Grade one submission: deal its checks out to children, run them at once, and resume.

A grading deals its checks out to `Limits.shards` children that run at once (`deal`), by what
each check cost the reference (stored with the exercise's signatures), so that they finish
together; a child costs a few tenths of a second to start, so a grading is split only when it
has `SHARD_MIN` checks for each child (one check, or a mutant's few, run in one child). The
split depends on the check list alone (stored costs included), never on the machine or on this
run's timing, so a submission that leaks state from one check into another scores the same
everywhere. A check that never reports (its child crashed, hung or exited) is failed with the
reason by `child`, and a new child resumes the run without the checks already recorded, so one
bad check costs only its own points. A submission that hangs (`limits.Strikes`) has its
children restarted under shorter limits; where that happens can depend on timing, and only
its checks that pass slowly can score differently for it.
"""

from __future__ import annotations

import tempfile
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path

from grading import contract, isolation
from grading.catalog import Exercise
from grading.channel import Progress
from grading.child import Run, fail, library, run_child
from grading.limits import Limits, Strikes, bounded
from grading.results import Check, Result

SHARD_MIN = 8  # the fewest checks a child is dealt when a grading is split


def grade(exercise: Exercise, submission: Path, checks: Iterable[Check],
          limits: Limits = Limits(), progress: Progress | None = None) -> list[Result]:
    """Run every check against `submission`; every check gets a final status. Raises
    `channel.ProtocolError` when a child breaks the contract (a fault of the grader's)."""
    results = {c.id: Result(c) for c in bounded(checks, limits)}
    shown = threading.Lock()

    def overall(_done: int, _total: int, name: str) -> None:
        """A shard's progress, told as the whole grading's."""
        if progress is not None:
            with shown:
                progress(sum(r.status != "pending" for r in results.values()), len(results), name)

    attempt = 0
    with tempfile.TemporaryDirectory(prefix="run-", dir=isolation.runs_dir()) as tmp:
        run = Run(exercise, submission, limits, time.monotonic() + limits.wall, Path(tmp),
                  overall, Strikes(from_costs=limits.from_costs))
        library(limits)  # made once, before children start at once
        for _ in range(len(results) + 1):
            pending = [r for r in results.values() if r.status == "pending"]
            if not pending:
                break
            if time.monotonic() >= run.deadline:
                fail(pending, "timeout", f"the run exceeded its wall limit of {limits.wall:g} s")
                break
            shards = deal(pending, max(1, min(limits.shards, len(pending) // SHARD_MIN)))
            runs = [partial(run_child, run, attempt + i, _config(run, shard),
                            {r.check.id: r for r in shard})
                    for i, shard in enumerate(shards)]
            attempt += len(runs)
            _run_at_once(runs)
            if sum(r.status == "pending" for r in results.values()) == len(pending):
                break  # no progress: new children would do the same
        fail([r for r in results.values() if r.status == "pending"], "crashed",
             "the check never reported a result")
    return list(results.values())


def _config(run: Run, shard: list[Result]) -> contract.Config:
    """A child's run config for `shard`, its checks' limits cut once the strikes are out."""
    if run.strikes is not None:
        run.strikes.cut(shard)
    return {"mode": "run", "only": [r.check.id for r in shard],
            "limits": {r.check.id: r.check.timeout for r in shard}}


def deal(pending: list[Result], count: int) -> list[list[Result]]:
    """`pending` dealt out to `count` shards: costliest check first, each to the shard whose
    costs add up least so far (ties: the first such shard), so the shards' costs differ by at
    most one check's; each shard keeps the collection order. The stored costs and the order are
    all it reads, so the same checks are dealt the same way on every machine."""
    load, shard_of = [0.0] * count, {}
    for result in sorted(pending, key=lambda r: -r.check.cost):  # stable: ties keep order
        least = min(range(count), key=lambda i: (load[i], i))
        load[least] += result.check.cost
        shard_of[result.check.id] = least
    return [[r for r in pending if shard_of[r.check.id] == i] for i in range(count)]


def _run_at_once(runs: Sequence[Callable[[threading.Event], object]]) -> None:
    """Call each of `runs` at once, the first in this thread; if one raises (Ctrl-C, say),
    `stop` tells the others to kill their children, and the error goes on once they have."""
    stop = threading.Event()
    with ThreadPoolExecutor(max(1, len(runs) - 1)) as pool:
        others = [pool.submit(run, stop) for run in runs[1:]]
        try:
            runs[0](stop)
            for other in others:
                other.result()
        except BaseException:
            stop.set()
            raise
