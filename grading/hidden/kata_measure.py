"""Measuring for the hidden checks of every exercise: one way to time a call, stop a slow one,
compare growth, and say what was measured.

A check proves a cost class in one of two ways:

* `growth(small, large, limit)`: the best CPU time of `large` over the best of `small`, the same
  work at two sizes. Only the ratio is compared, never a time, so a faster or slower CPU changes
  both sides alike.
* `ratio(call, floor, limit)`: the best CPU time of `call` over that of `floor`, a plain
  implementation of the same work on the same input measured in the same run (a constant-factor
  target, or a growth class where one size is enough).

Both stop a measured call once it has cost `MARGIN` times what would pass (a SIGPROF budget
where this is the main thread), so a wrong answer costs the check a bounded time instead of its
whole run, and report such a call as `inf`; a run stopped there ends the measurement, since
noise on a busy machine does not double a run's CPU time. Garbage collection is off while a
call is timed (a collection would land in whichever run crosses a threshold), and the clock is
this thread's CPU time (other processes on a busy machine are left out), wall time where that
clock ticks coarsely.
Noise only adds time, so the best of several runs is the honest figure.

Every figure is also reported to the grader (`figure`), which prints it with the threshold in
`python -m grading.margins`: a check is only as good as its margin on both sides, the reference's
figure at most half the threshold and each wrong answer's at least twice it.

`count(call)` is for the checks that can count operations instead (calls of a function the
check hands in, rows a database steps over): counts do not depend on the machine at all.

Standard library only: this file is laid beside every exercise's hidden checks.
"""

from __future__ import annotations

import gc
import math
import os
import signal
import sys
import threading
import time
from collections.abc import Callable

MARGIN = 2.0  # what a wrong answer must exceed the threshold by, and the reference stay under
ROUNDS = 3  # tries at the large size before a slow answer is judged slow


def _fine(clock: Callable[[], float]) -> bool:
    began = clock()
    sum(range(20_000))
    return clock() > began


CLOCK: Callable[[], float] = (time.thread_time if all(_fine(time.thread_time) for _ in range(5))
                              else time.perf_counter)


class _OverBudget(BaseException):  # not an Exception: a submission's `except` lets it by
    pass


def _stop(_signum: int, _frame: object) -> None:
    raise _OverBudget


def seconds(call: Callable[[], object], budget: float = math.inf) -> float:
    """This thread's CPU seconds for `call`; `inf` when it was stopped after `budget` CPU
    seconds (slower than the budget, which is all a comparison needs to know)."""
    timed = (0 < budget < math.inf and hasattr(signal, "setitimer")
             and threading.current_thread() is threading.main_thread())
    before = signal.signal(signal.SIGPROF, _stop) if timed else None
    enabled = gc.isenabled()
    gc.disable()
    began = CLOCK()
    try:
        try:
            if timed:  # the process's CPU time: at least this thread's
                signal.setitimer(signal.ITIMER_PROF, budget)
            call()
        finally:
            if timed:
                signal.setitimer(signal.ITIMER_PROF, 0)
        spent = CLOCK() - began
        return spent if spent <= budget else math.inf
    except _OverBudget:
        return math.inf
    finally:
        if enabled:
            gc.enable()
        if timed:
            signal.signal(signal.SIGPROF, before)


def best(call: Callable[[], object], repeat: int = 5, budget: float = math.inf) -> float:
    """The least CPU time of `repeat` runs of `call` (each stopped at `budget`)."""
    return min(seconds(call, budget) for _ in range(repeat))


def growth(small: Callable[[], object], large: Callable[[], object], limit: float, *,
           label: str = "", repeat: int = 5) -> float:
    """Best CPU time of `large` over best of `small`, in rounds until a large run is under
    `limit`; a large run is stopped once it costs `MARGIN * limit` times the small one (the
    ratio is then `inf`: "over the limit, by the margin")."""
    small()  # warm up: first calls fill caches and build lazy tables
    base = found = math.inf
    for _ in range(ROUNDS):
        base = min(base, best(small, repeat))
        run = seconds(large, MARGIN * limit * base)
        found = min(found, run)
        if found < limit * base or math.isinf(run):
            break  # fast enough, or stopped at the margin: noise does not double a run
    figure = found / base if base > 0 else math.inf
    report(label or "growth", figure, limit)
    return figure


def ratio(call: Callable[[], object], floor: Callable[[], object], limit: float, *,
          label: str = "", repeat: int = 3) -> float:
    """Best CPU time of `call` over best of `floor` (the same work done plainly, on the same
    input), in rounds until `call` is under `limit` times the floor; `call` is stopped at
    `MARGIN * limit` floors (then `inf`)."""
    floor()
    base = found = math.inf
    for _ in range(ROUNDS):
        base = min(base, best(floor, repeat))
        run = best(call, repeat, MARGIN * limit * base)
        found = min(found, run)
        if found < limit * base or math.isinf(run):
            break
    figure = found / base if base > 0 else math.inf
    report(label or "ratio", figure, limit)
    return figure


def times(figure: float, limit: float) -> str:
    """A measured ratio as a failure message shows it."""
    return f"over {MARGIN * limit:.0f}x" if math.isinf(figure) else f"{figure:.0f}x"


def count(limit: float, counted: int, *, label: str = "count") -> int:
    """Report a counted figure (operations, rows, calls) against its limit; returns `counted`.
    A label starting "count" marks the figure exact: the same on every machine."""
    report(label, float(counted), limit)
    return counted


def report(label: str, figure: float, limit: float) -> None:
    """Tell the grader what this check measured (shown by `python -m grading.margins`); a
    run outside the grader reports nothing."""
    plugin = sys.modules.get("_kata_grading_plugin")
    note = getattr(plugin, "note_figure", None)
    if callable(note):
        note(label, figure, limit)
    elif os.environ.get("KATA_MEASURE_VERBOSE"):
        print(f"measure: {label}: {figure:.3g} (limit {limit:g})", file=sys.stderr)
