"""Helpers for the hidden micro_batcher checks: the backends, a recording rig, and a model.

Timing runs on trio with a fresh virtual clock per check (`MockClock(autojump_threshold=0)`):
exact dispatch times, no waiting. Behavioural checks also run on asyncio, on the real clock,
where they never depend on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import trio
import trio.testing
from anyio.abc import TaskGroup
from micro_batcher import MicroBatcher

W = 1 / 64  # the usual window: exact in binary, short in real time
LONG = 3600.0  # a window that never ends within a check: only size and exit dispatch
REAL_HORIZON = 1.0  # real seconds after which a run on asyncio is stuck (the reference: ms)
Results = Callable[[list[int]], Sequence[int | BaseException]]
Schedule = Sequence[tuple[float, Sequence[int]]]


@pytest.fixture(params=["trio", "asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """Trio on a fresh virtual clock (exact times, no waiting); asyncio on the real clock."""
    if request.param == "trio":
        return ("trio", {"clock": trio.testing.MockClock(autojump_threshold=0)})
    return ("asyncio", {})


trio_only = pytest.mark.parametrize("anyio_backend", ["trio"], indirect=True)


def on_trio() -> bool:
    try:
        asyncio.current_task()
    except RuntimeError:
        return True
    return False


async def quiesce() -> None:
    """Return once every other task is blocked: the batcher has reacted to what just happened."""
    if on_trio():
        await anyio.wait_all_tasks_blocked()  # runs before any jump of the virtual clock
        return
    me = asyncio.current_task()
    for _ in range(10_000):
        await anyio.lowlevel.checkpoint()
        waiters = [getattr(t, "_fut_waiter", None) for t in asyncio.all_tasks() if t is not me]
        if all(w is not None and not w.done() for w in waiters):
            return


def leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in leaves(sub)]
    return [exc]


def expect_returned(what: str, outcome: tuple[str, object] | None, want: object) -> None:
    """Fail unless `outcome` is ("returned", want); a raised exception is kept as the cause,
    so the report shows the submission's line that raised it."""
    if outcome == ("returned", want):
        return
    message = f"{what} ended with {outcome}, expected to return {want!r}"
    if outcome is not None and isinstance(outcome[1], BaseException):
        raise AssertionError(message) from outcome[1]
    raise AssertionError(message)


async def noop(items: list[int]) -> list[int]:
    return items


def raising(bad: int) -> Results:
    def results(items: list[int]) -> list[int]:
        if bad in items:
            raise KeyError(f"batch with {bad}")
        return [10 * x for x in items]
    return results


class _Spin(trio.abc.Instrument):
    """Cancels `scope` once the tasks have taken `budget` steps at one virtual instant: a busy
    loop never lets trio's virtual clock move on, so no deadline would ever stop it."""

    def __init__(self, scope: anyio.CancelScope, budget: int = 2_000) -> None:
        self.scope, self.budget = scope, budget
        self.at, self.steps, self.tripped = -math.inf, 0, False

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        now = trio.current_time()
        if now != self.at:
            self.at, self.steps = now, 0
        self.steps += 1
        if self.steps > self.budget and not self.tripped:
            self.tripped = True
            self.scope.cancel()


class _Tally(trio.abc.Instrument):
    """Counts one kind of trio event; past `budget` it cancels `scope`, so that a wrong answer
    far over a check's limit is stopped at twice what would pass, not left to run into the
    check's time limit."""

    def __init__(self, budget: float = math.inf) -> None:
        self.count, self.budget = 0, budget
        self.scope: trio.CancelScope | None = None

    def tick(self) -> None:
        self.count += 1
        if self.count > self.budget and self.scope is not None:
            self.scope.cancel()


class StepTally(_Tally):
    """Counts task steps (each resumption of a task)."""

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.tick()


class SpawnTally(_Tally):
    """Counts the tasks spawned."""

    def task_spawned(self, task: trio.lowlevel.Task) -> None:
        self.tick()


@contextmanager
def stuck_guard(horizon: float = 3600.0, real: float = REAL_HORIZON) -> Iterator[anyio.CancelScope]:
    """A scope that fails the check, instead of letting it run into its time limit, when the
    run inside it is still busy after `horizon` s of virtual time on trio (`real` s of real time
    on asyncio, where the reference needs a few milliseconds), or when its tasks take
    `_Spin.budget` steps at one virtual instant on trio (a busy loop, which no deadline stops)."""
    trio_run = on_trio()
    with anyio.move_on_after(horizon if trio_run else real) as guard:
        spin = _Spin(guard)
        if trio_run:
            trio.lowlevel.add_instrument(spin)
        try:
            yield guard
        finally:
            if trio_run:
                trio.lowlevel.remove_instrument(spin)
    if spin.tripped:
        pytest.fail(f"the batcher's tasks took {spin.budget} steps at one virtual instant "
                    f"({spin.at:.6g} s) without the clock moving on: a busy loop?")
    if guard.cancelled_caught:
        pytest.fail(f"the batcher was still busy after {horizon} s of virtual time: a deadlock?"
                    if trio_run else f"the batcher was still busy after {real} s of "
                    f"real time (the run takes a few milliseconds): a deadlock?")


class Rig:
    """A batcher under test, with a recording `process` and one task per caller."""

    def __init__(self, *, size: int, wait: float = W, concurrent: int | None = 1,
                 duration: float = 0.0, results: Results | None = None) -> None:
        self.calls: list[tuple[float, list[int]]] = []  # (start time, items) of each process call
        self.outcomes: dict[int, tuple[str, object]] = {}
        self.scopes: dict[int, anyio.CancelScope] = {}
        self.active = self.peak = 0
        self.duration = duration
        self.gate: anyio.Event | None = None  # when set, every process call waits for it
        self.results: Results = results or (lambda items: [10 * x for x in items])
        self.t0 = 0.0
        self.horizon = 3600.0  # on trio, virtual seconds after which the batcher is stuck
        self._woken: anyio.Event | None = None
        limit = {} if concurrent is None else {"max_concurrent_batches": concurrent}
        self.batcher: MicroBatcher[int, int] = MicroBatcher(
            self._process, max_batch_size=size, max_wait=wait, **limit)

    def now(self) -> float:
        return anyio.current_time() - self.t0

    async def _process(self, items: list[int]) -> Sequence[int | BaseException]:
        self.calls.append((self.now(), list(items)))
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            if self.gate is not None:
                await self.gate.wait()
            await anyio.sleep(self.duration)
        finally:
            self.active -= 1
        return self.results(items)

    async def _call(self, item: int) -> None:
        with anyio.CancelScope() as scope:
            self.scopes[item] = scope
            try:
                self.outcomes[item] = ("returned", await self.batcher.submit(item))
            except Exception as exc:
                self.outcomes[item] = ("raised", exc)
        if self._woken is not None:
            self._woken.set()

    @asynccontextmanager
    async def open(self) -> AsyncIterator[TaskGroup]:
        """The batcher, open inside a task group of callers. Once it has closed, callers still
        waiting are cancelled: a batcher that loses items fails the check instead of hanging,
        and so does one that deadlocks or busy-loops (see `stuck_guard`).
        An exception out of the block fails the check with that exception as its cause."""
        self.t0, crashed = anyio.current_time(), None
        with stuck_guard(self.horizon) as guard:
            async with anyio.create_task_group() as tg:
                try:
                    async with self.batcher:
                        yield tg
                except Exception as exc:
                    crashed = exc
                finally:
                    if not guard.cancel_called:
                        await quiesce()
                    tg.cancel_scope.cancel()
        if crashed is not None:
            raise AssertionError(f"the batcher's block raised {leaves(crashed)}") from crashed

    async def submit(self, tg: TaskGroup, *items: int) -> None:
        """Start one caller per item, in this order, each accepted before the next starts."""
        for item in items:
            tg.start_soon(self._call, item)
            await quiesce()

    async def submit_together(self, tg: TaskGroup, *items: int) -> None:
        """Once the batcher is idle, start one caller per item in one go (they all run before
        the batcher's own tasks do), then wait until the batcher has reacted."""
        await quiesce()
        for item in items:
            tg.start_soon(self._call, item)
        await quiesce()

    def cancel(self, *items: int) -> None:
        for item in items:
            self.scopes[item].cancel()

    async def wait_for(self, items: Sequence[int]) -> None:
        while not set(items) <= self.outcomes.keys():
            self._woken = anyio.Event()
            await self._woken.wait()

    async def run(self, schedule: Schedule, *, leave_early: bool = False,
                  cancels: Sequence[tuple[float, int]] = ()) -> list[int]:
        """Submit each group of items at its time (and cancel each caller of `cancels` at its
        time, before the arrivals of that instant), and leave the batcher once every caller
        not cancelled has its outcome, or right after the last event with `leave_early`.
        Returns the items whose callers were left without an outcome (cancelled ones aside)."""
        items = [i for _, group in schedule for i in group]
        cancelled = {i for _, i in cancels}
        events = sorted([(at, 0, (i,)) for at, i in cancels]
                        + [(at, 1, tuple(group)) for at, group in schedule])
        async with self.open() as tg:
            for at, kind, group in events:
                await anyio.sleep_until(self.t0 + at)
                if kind == 0:
                    self.cancel(*group)
                    await quiesce()
                else:
                    await self.submit(tg, *group)
            if not leave_early:
                await self.wait_for([i for i in items if i not in cancelled])
        return [i for i in items if i not in self.outcomes and i not in cancelled]

    def batches(self) -> list[list[int]]:
        return [items for _, items in self.calls]

    def returned(self, items: Sequence[int]) -> None:
        for i in items:
            expect_returned(f"submit({i})", self.outcomes.get(i), 10 * i)


def model(groups: Schedule, size: int, wait: float,
          leave_early: bool) -> list[tuple[float, list[int]]]:
    """Dispatch times and batches the rules imply, for a `process` that takes no time."""
    out: list[tuple[float, list[int]]] = []
    pending: list[tuple[float, int]] = []

    def timers(before: float) -> None:
        while pending and pending[0][0] + wait < before:
            out.append((pending[0][0] + wait, [i for _, i in pending[:size]]))
            del pending[:size]

    for at, group in groups:
        timers(at)
        for item in group:
            pending.append((at, item))
            if len(pending) == size:
                out.append((at, [i for _, i in pending]))
                pending.clear()
    if leave_early:
        out += [(groups[-1][0], [i for _, i in pending[k:k + size]])
                for k in range(0, len(pending), size)]
        pending.clear()
    timers(math.inf)
    return out


def run_on_trio(rig: Rig, schedule: Schedule, leave_early: bool = False,
                cancels: Sequence[tuple[float, int]] = ()) -> None:
    async def main() -> None:
        await rig.run(schedule, leave_early=leave_early, cancels=cancels)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
