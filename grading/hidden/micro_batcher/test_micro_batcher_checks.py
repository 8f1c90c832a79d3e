"""Hidden checks for micro_batcher: every rule of the statement, its traps, bad input,
concurrency and performance.

Timing runs on trio with a fresh virtual clock per check (`MockClock(autojump_threshold=0)`):
exact dispatch times, no waiting. Behavioural checks also run on asyncio, on the real clock,
where they never depend on how fast the machine is.
"""

from __future__ import annotations

import asyncio
import math
import re
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import anyio
import anyio.lowlevel
import pytest
import trio
import trio.testing
from anyio.abc import TaskGroup
from hypothesis import example, given, settings
from hypothesis import strategies as st
from micro_batcher import BatchError, MicroBatcher

pytestmark = pytest.mark.anyio

W = 1 / 64  # the usual window: exact in binary, short in real time
LONG = 3600.0  # a window that never ends within a check: only size and exit dispatch
Results = Callable[[list[int]], Sequence[int | BaseException]]


@pytest.fixture(params=["trio", "asyncio"])
def anyio_backend(request: pytest.FixtureRequest) -> tuple[str, dict[str, Any]]:
    """Trio on a fresh virtual clock (exact times, no waiting); asyncio on the real clock."""
    if request.param == "trio":
        return ("trio", {"clock": trio.testing.MockClock(autojump_threshold=0)})
    return ("asyncio", {})


_trio_only = pytest.mark.parametrize("anyio_backend", ["trio"], indirect=True)


def _on_trio() -> bool:
    try:
        asyncio.current_task()
    except RuntimeError:
        return True
    return False


async def _quiesce() -> None:
    """Return once every other task is blocked: the batcher has reacted to what just happened."""
    if _on_trio():
        await anyio.wait_all_tasks_blocked()  # runs before any jump of the virtual clock
        return
    me = asyncio.current_task()
    for _ in range(10_000):
        await anyio.lowlevel.checkpoint()
        waiters = [getattr(t, "_fut_waiter", None) for t in asyncio.all_tasks() if t is not me]
        if all(w is not None and not w.done() for w in waiters):
            return


def _leaves(exc: BaseException) -> list[BaseException]:
    if isinstance(exc, BaseExceptionGroup):
        return [leaf for sub in exc.exceptions for leaf in _leaves(sub)]
    return [exc]


class _Rig:
    """A batcher under test, with a recording `process` and one task per caller."""

    def __init__(self, *, size: int, wait: float = W, concurrent: int = 1,
                 duration: float = 0.0, results: Results | None = None) -> None:
        self.calls: list[tuple[float, list[int]]] = []  # (start time, items) of each process call
        self.outcomes: dict[int, tuple[str, object]] = {}
        self.scopes: dict[int, anyio.CancelScope] = {}
        self.active = self.peak = 0
        self.duration = duration
        self.gate: anyio.Event | None = None  # when set, every process call waits for it
        self.results: Results = results or (lambda items: [10 * x for x in items])
        self.t0 = 0.0
        self._woken: anyio.Event | None = None
        self.batcher: MicroBatcher[int, int] = MicroBatcher(
            self._process, max_batch_size=size, max_wait=wait, max_concurrent_batches=concurrent)

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
        waiting are cancelled: a batcher that loses items fails the check instead of hanging.
        On trio, a batcher still busy after a virtual hour fails it too."""
        self.t0, crashed = anyio.current_time(), None
        with anyio.move_on_after(3600 if _on_trio() else math.inf) as guard:
            async with anyio.create_task_group() as tg:
                try:
                    async with self.batcher:
                        yield tg
                except Exception as exc:
                    crashed = exc
                finally:
                    if not guard.cancel_called:
                        await _quiesce()
                    tg.cancel_scope.cancel()
        if guard.cancelled_caught:
            pytest.fail("the batcher was still busy after an hour of virtual time: a deadlock?")
        if crashed is not None:
            pytest.fail(f"the batcher's block raised {_leaves(crashed)}")

    async def submit(self, tg: TaskGroup, *items: int) -> None:
        """Start one caller per item, in this order, each accepted before the next starts."""
        for item in items:
            tg.start_soon(self._call, item)
            await _quiesce()

    async def wait_for(self, items: Sequence[int]) -> None:
        while not set(items) <= self.outcomes.keys():
            self._woken = anyio.Event()
            await self._woken.wait()

    async def run(self, schedule: Sequence[tuple[float, Sequence[int]]], *,
                  leave_early: bool = False) -> list[int]:
        """Submit each group of items at its time and leave the batcher once every caller has
        its outcome, or right after the last group with `leave_early`.
        Returns the items whose callers were left without an outcome."""
        items = [i for _, group in schedule for i in group]
        async with self.open() as tg:
            for at, group in schedule:
                await anyio.sleep_until(self.t0 + at)
                await self.submit(tg, *group)
            if not leave_early:
                await self.wait_for(items)
        return [i for i in items if i not in self.outcomes]

    def batches(self) -> list[list[int]]:
        return [items for _, items in self.calls]

    def returned(self, items: Sequence[int]) -> None:
        for i in items:
            assert self.outcomes.get(i) == ("returned", 10 * i), \
                f"submit({i}) ended with {self.outcomes.get(i)}, expected to return {10 * i}"


def _model(groups: Sequence[tuple[float, Sequence[int]]], size: int, wait: float,
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


def _run_on_trio(rig: _Rig, schedule: Sequence[tuple[float, Sequence[int]]],
                 leave_early: bool = False) -> None:
    async def main() -> None:
        await rig.run(schedule, leave_early=leave_early)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


# --- rules 1 and 9: the two triggers, a window that never restarts, no stale timer --------


@pytest.mark.points(2)
async def test_a_full_batch_is_dispatched_at_once(anyio_backend_name: str) -> None:
    """A batch that reaches max_batch_size is dispatched at once, not when its window ends."""
    rig = _Rig(size=3, wait=LONG)
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1, 2, 3, 4, 5, 6)
        seen = rig.batches()
    assert seen == [[0, 1, 2], [3, 4, 5]], f"7 items, max_batch_size=3, a window of an hour: " \
        f"dispatched {seen} at once, expected [[0, 1, 2], [3, 4, 5]]"
    rig.returned(range(7))


@pytest.mark.points(2)
async def test_a_partial_batch_waits_exactly_max_wait(anyio_backend_name: str) -> None:
    """A partial batch is dispatched max_wait after its first item arrived (exactly, on trio)."""
    rig, on_trio = _Rig(size=10), anyio_backend_name == "trio"  # asyncio: no real sleeping
    staggered = [(0.0, [0]), (W / 4, [1]), (W / 2, [2])]
    assert await rig.run(staggered if on_trio else [(0.0, [0, 1, 2])]) == []
    rig.returned([0, 1, 2])
    assert not on_trio or rig.calls == [(W, [0, 1, 2])], \
        f"dispatched {rig.calls}, expected [({W}, [0, 1, 2])]"


@_trio_only
@pytest.mark.points(3)
async def test_the_window_does_not_restart_under_a_trickle() -> None:
    """The window starts at a batch's first item: a steady trickle does not starve the batch."""
    rig = _Rig(size=100, wait=0.875)
    await rig.run([(0.25 * k, [k]) for k in range(12)])
    want = [(0.875, [0, 1, 2, 3]), (1.875, [4, 5, 6, 7]), (2.875, [8, 9, 10, 11])]
    assert rig.calls == want, \
        f"one item every 0.25 s, max_wait=0.875: dispatched {rig.calls}, expected {want}"


@_trio_only
@pytest.mark.points(2)
async def test_a_size_flush_leaves_no_stale_timer() -> None:
    """After a size dispatch, the old window fires no empty or premature batch."""
    rig = _Rig(size=2, wait=1.0)
    await rig.run([(0.0, [0]), (0.5, [1]), (0.75, [2])])
    want = [(0.5, [0, 1]), (1.75, [2])]
    assert rig.calls == want, f"dispatched {rig.calls}, expected {want}"


@pytest.mark.points(3)
@pytest.mark.timeout(5)
async def test_later_batches_dispatch_on_time_after_a_timer_flush(anyio_backend_name: str) -> None:
    """After a batch dispatched by the timer, later batches still dispatch on time (no deadlock)."""
    rig = _Rig(size=4, duration=W / 2)
    rig.t0 = anyio.current_time()
    # A deadlock fails here, after a virtual hour on trio, or 3 s (50 times the need) on asyncio.
    with anyio.move_on_after(3600 if _on_trio() else 3) as guard:
        async with rig.batcher:
            got = [await rig.batcher.submit(i) for i in range(3)]  # one caller at a time
    if guard.cancelled_caught:
        pytest.fail("three submits one after another never all returned: a deadlock?")
    assert got == [0, 10, 20], f"three submits one after another returned {got}"
    want = [(W, [0]), (2.5 * W, [1]), (4 * W, [2])]
    assert anyio_backend_name != "trio" or rig.calls == want, \
        f"dispatched {rig.calls}, expected {want}"


@pytest.mark.category("edge_cases")
@pytest.mark.parametrize(("size", "wait"), [(1, LONG), (10, 0)], ids=["size_1", "wait_0"])
async def test_degenerate_limits_send_every_item_at_once(size: int, wait: float) -> None:
    """max_batch_size=1, or max_wait=0, sends each item in a batch of its own as it arrives."""
    rig = _Rig(size=size, wait=wait)
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1)
        seen = rig.batches()
    assert seen == [[0], [1]], f"max_batch_size={size}, max_wait={wait}: dispatched {seen}"
    rig.returned([0, 1])


@settings(max_examples=40)
@given(gaps=st.lists(st.tuples(st.integers(0, 6), st.integers(1, 4)), min_size=1, max_size=12),
       size=st.integers(1, 5), eighths=st.integers(0, 7), leave_early=st.booleans())
@example(gaps=[(1, 1)] * 12, size=100, eighths=3, leave_early=False)  # a trickle
def test_dispatches_match_the_model(gaps: list[tuple[int, int]], size: int, eighths: int,
                                    leave_early: bool) -> None:
    """Dispatch times and batch contents match a model of the two triggers and the exit flush."""
    wait, at, groups, n = (2 * eighths + 1) / 8, 0.0, [], 0
    for gap, count in gaps:  # arrivals on a grid of 0.25 s; windows end between grid points
        at += gap / 4
        groups.append((at, list(range(n, n + count))))
        n += count
    rig = _Rig(size=size, wait=wait)
    _run_on_trio(rig, groups, leave_early)
    want = _model(groups, size, wait, leave_early)
    assert rig.calls == want, f"arrivals {groups}, max_batch_size={size}, max_wait={wait}, " \
                              f"leave early: {leave_early}; dispatched {rig.calls}, expected {want}"
    rig.returned(range(n))


# --- rules 2-5: results, exceptions, wrong-length results ---------------------------------


@pytest.mark.points(2)
async def test_results_go_back_in_acceptance_order(anyio_backend_name: str) -> None:
    """The caller of the i-th item of a batch gets the i-th result (acceptance order)."""
    rig = _Rig(size=4, wait=LONG, results=lambda items: [100 + k for k in range(len(items))])
    assert await rig.run([(0.0, [7, 3, 9, 1])], leave_early=True) == []
    assert rig.batches() == [[7, 3, 9, 1]], f"process got {rig.batches()}, expected [[7, 3, 9, 1]]"
    got = {i: rig.outcomes[i][1] for i in (7, 3, 9, 1)}
    assert got == {7: 100, 3: 101, 9: 102, 1: 103}, f"callers got {got} from [100, 101, 102, 103]"


def _raising(bad: int) -> Results:
    def results(items: list[int]) -> list[int]:
        if bad in items:
            raise KeyError(f"batch with {bad}")
        return [10 * x for x in items]
    return results


@pytest.mark.points(3)
async def test_a_raising_batch_fails_only_its_own_callers(anyio_backend_name: str) -> None:
    """When process raises, every caller of that batch gets that exception, and only they."""
    rig = _Rig(size=2, wait=LONG, concurrent=2, results=_raising(2))
    rig.gate = anyio.Event()
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1, 2, 3, 4, 5)  # [0, 1] and [2, 3] at the gate, [4, 5] pending
        rig.gate.set()
    for i in (2, 3):
        kind, exc = rig.outcomes[i]
        assert kind == "raised" and isinstance(exc, KeyError) and exc.args == ("batch with 2",), \
            f"submit({i}) in the raising batch ended with {rig.outcomes[i]}, expected its KeyError"
    rig.returned([0, 1, 4, 5])


@pytest.mark.points(2)
async def test_the_batcher_keeps_serving_after_a_raising_batch(anyio_backend_name: str) -> None:
    """After a batch whose process raised, later batches are processed as usual."""
    rig = _Rig(size=2, results=_raising(0))
    async with rig.open() as tg:
        await rig.submit(tg, 0)
        await rig.wait_for([0])
        await rig.submit(tg, 5)
        await rig.wait_for([5])
    assert isinstance(rig.outcomes[0][1], KeyError), f"submit(0) ended with {rig.outcomes[0]}"
    rig.returned([5])


@pytest.mark.points(2)
async def test_a_returned_exception_is_raised_in_its_own_caller_only(
        anyio_backend_name: str) -> None:
    """An exception instance returned at position i is raised in the i-th caller only."""
    error = ValueError("bad item")
    rig = _Rig(size=3, wait=LONG, results=lambda xs: [error if x == 1 else 10 * x for x in xs])
    assert await rig.run([(0.0, [0, 1, 2])], leave_early=True) == []
    kind, got = rig.outcomes[1]
    assert kind == "raised" and type(got) is ValueError and got.args == error.args, \
        f"process returned {error!r} for item 1: submit(1) ended with {rig.outcomes[1]}"
    rig.returned([0, 2])


@pytest.mark.points(2)
@pytest.mark.parametrize("delta", [-1, 1], ids=["too_few", "too_many"])
async def test_wrong_result_count_fails_every_caller_with_batch_error(
        anyio_backend_name: str, delta: int) -> None:
    """Too few or too many results: every caller of that batch gets a BatchError, nobody hangs."""
    rig = _Rig(size=3, wait=LONG, results=lambda items: list(range(len(items) + delta)))
    left = await rig.run([(0.0, [0, 1, 2])], leave_early=True)
    assert left == [], f"callers {left} never got an outcome (process returned {3 + delta} of 3)"
    for i in range(3):
        kind, exc = rig.outcomes[i]
        assert kind == "raised" and isinstance(exc, BatchError), \
            f"submit({i}) ended with {rig.outcomes[i]}; process returned {3 + delta} results for 3"


async def test_batch_error_names_both_counts(anyio_backend_name: str) -> None:
    """The BatchError message gives the expected and the received number of results."""
    rig = _Rig(size=7, wait=LONG, results=lambda items: [0] * 4)
    await rig.run([(0.0, list(range(7)))], leave_early=True)
    message = str(rig.outcomes[0][1])
    assert re.search(r"\b7\b", message) and re.search(r"\b4\b", message), \
        f"message {message!r} should name 7 (expected) and 4 (received)"


# --- rules 6-7: concurrency and cancellation ----------------------------------------------


@pytest.mark.category("concurrency")
@pytest.mark.points(2)
@pytest.mark.parametrize("limit", [1, 3])
async def test_at_most_max_concurrent_batches_run_at_once(anyio_backend_name: str,
                                                          limit: int) -> None:
    """At most max_concurrent_batches calls of process run at once, and that many do."""
    rig = _Rig(size=2, wait=LONG, concurrent=limit)
    rig.gate = anyio.Event()
    async with rig.open() as tg:
        await rig.submit(tg, *range(12))
        running = rig.peak
        rig.gate.set()
    assert running == rig.peak == limit, f"max_concurrent_batches={limit}, 6 full batches: " \
        f"{running} ran at once before the gate opened, {rig.peak} at most"
    assert sorted(rig.batches()) == [[2 * k, 2 * k + 1] for k in range(6)], \
        f"dispatched {rig.batches()}"
    rig.returned(range(12))


@pytest.mark.category("concurrency")
@pytest.mark.points(2)
async def test_items_gather_while_the_slots_are_busy(anyio_backend_name: str) -> None:
    """Items arriving while every slot is busy gather into the next batch, sent when one frees."""
    rig = _Rig(size=4)
    rig.gate = anyio.Event()
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1, 2, 3)  # full: in flight until the gate opens
        await rig.submit(tg, 4, 5)
        if _on_trio():
            await anyio.sleep(2 * W)  # the window of [4, 5] ends while the slot is busy
        await rig.submit(tg, 6)
        if _on_trio():
            await anyio.sleep(2 * W)
        rig.gate.set()
        await rig.wait_for(range(7))
    assert rig.batches() == [[0, 1, 2, 3], [4, 5, 6]], f"dispatched {rig.batches()}"
    rig.returned(range(7))
    assert anyio_backend_name != "trio" or rig.calls[1][0] == 4 * W, \
        f"second batch at {rig.calls[1][0]}, expected {4 * W}: its window ended at {W}, the slot " \
        f"freed at {4 * W}"


@pytest.mark.category("concurrency")
@pytest.mark.points(2)
async def test_a_caller_cancelled_before_dispatch_withdraws_its_item(
        anyio_backend_name: str) -> None:
    """A caller cancelled before dispatch takes its item out: it is never processed."""
    rig = _Rig(size=3, wait=LONG)
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1)
        rig.scopes[1].cancel()
        await _quiesce()
        await rig.submit(tg, 2, 3)
        seen = rig.batches()
    assert seen == [[0, 2, 3]], f"0, 1 (cancelled), 2, 3 with max_batch_size=3: dispatched {seen}"
    rig.returned([0, 2, 3])


@pytest.mark.category("concurrency")
@pytest.mark.points(3)
async def test_a_caller_cancelled_after_dispatch_does_not_disturb_the_others(
        anyio_backend_name: str) -> None:
    """A caller cancelled after dispatch leaves the rest of its batch to get their results."""
    rig = _Rig(size=3)
    rig.gate = anyio.Event()
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1, 2)  # full: dispatched, held at the gate
        rig.scopes[1].cancel()
        await _quiesce()
        rig.gate.set()
        await rig.wait_for([0, 2])
        await rig.submit(tg, 3)
        await rig.wait_for([3])
    assert rig.batches() == [[0, 1, 2], [3]], f"dispatched {rig.batches()}"
    rig.returned([0, 2, 3])


@_trio_only
@pytest.mark.category("concurrency")
async def test_cancelling_every_caller_leaves_no_empty_batch() -> None:
    """Cancelling every caller of a pending batch sends nothing; the next item gets a new window."""
    rig = _Rig(size=3, wait=1.0)
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1)
        rig.scopes[0].cancel()
        rig.scopes[1].cancel()
        await anyio.sleep(0.75)
        await rig.submit(tg, 2)
        await rig.wait_for([2])
    assert rig.calls == [(1.75, [2])], f"dispatched {rig.calls}, expected [(1.75, [2])]"


@pytest.mark.category("concurrency")
@settings(max_examples=20)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=25), st.integers(1, 4),
       st.integers(1, 3), st.sampled_from([0.0, W / 2, 2 * W]))
def test_every_item_is_processed_once_in_order_under_load(
        gaps: list[int], size: int, limit: int, duration: float) -> None:
    """Under any load, each item is processed once, in order, within the limits, for its caller."""
    rig = _Rig(size=size, concurrent=limit, duration=duration)
    _run_on_trio(rig, [(sum(gaps[:k + 1]) * W / 4, [k]) for k in range(len(gaps))])
    flat = [i for batch in sorted(rig.batches()) for i in batch]  # concurrent batches may start
    assert flat == list(range(len(gaps))), f"process saw {rig.batches()}"  # in any order
    assert all(0 < len(b) <= size for b in rig.batches()), f"batch sizes: {rig.batches()}"
    assert rig.peak <= limit, f"{rig.peak} process calls at once, limit {limit}"
    rig.returned(range(len(gaps)))


# --- rule 8: the lifecycle ------------------------------------------------------------------


@_trio_only
@pytest.mark.category("edge_cases")
@pytest.mark.points(3)
async def test_leaving_dispatches_pending_items_at_once() -> None:
    """Leaving the block dispatches what is pending at once and delivers every result."""
    rig = _Rig(size=4, wait=LONG, duration=1.0)
    left = await rig.run([(0.0, [0, 1, 2, 3, 4, 5])], leave_early=True)
    assert left == [], f"callers {left} were left without a result when the batcher closed"
    assert rig.calls == [(0.0, [0, 1, 2, 3]), (1.0, [4, 5])], \
        f"dispatched {rig.calls}; [4, 5] was pending at exit and should go when the slot frees"
    rig.returned(range(6))


@pytest.mark.category("edge_cases")
@pytest.mark.points(2)
async def test_leaving_by_an_exception_still_delivers_every_result(
        anyio_backend_name: str) -> None:
    """Leaving by an exception delivers every accepted item's result; the exception propagates."""
    rig, propagated = _Rig(size=2, wait=LONG, concurrent=2, duration=W), None
    async with anyio.create_task_group() as tg:
        try:
            async with rig.batcher:
                await rig.submit(tg, 0, 1, 2)
                raise ZeroDivisionError("the block failed")
        except Exception as exc:
            propagated = exc
        await _quiesce()
        tg.cancel_scope.cancel()
    assert isinstance(propagated, ZeroDivisionError), \
        f"the block's ZeroDivisionError should propagate out of it; got {propagated!r}"
    rig.returned([0, 1, 2])


@pytest.mark.category("edge_cases")
async def test_submit_outside_the_block_raises_runtime_error(anyio_backend_name: str) -> None:
    """submit before the block is entered, or after it was left, raises RuntimeError."""
    rig = _Rig(size=2)
    with pytest.raises(RuntimeError):
        await rig.batcher.submit(1)
    async with rig.batcher:
        pass
    with pytest.raises(RuntimeError):
        await rig.batcher.submit(2)


@_trio_only
@pytest.mark.category("edge_cases")
async def test_submit_during_exit_raises_runtime_error() -> None:
    """submit once the block has begun to exit raises RuntimeError (intake is closed)."""
    raised: list[BaseException] = []

    async def process(items: list[int]) -> list[int]:
        with anyio.move_on_after(60):  # virtual time: a batcher that accepts it fails cleanly
            try:
                await batcher.submit(99)
            except Exception as exc:
                raised.append(exc)
        return items

    batcher: MicroBatcher[int, int] = MicroBatcher(process, max_batch_size=5, max_wait=LONG)
    async with anyio.create_task_group() as tg, batcher:
        tg.start_soon(batcher.submit, 1)
        await _quiesce()
    assert len(raised) == 1 and isinstance(raised[0], RuntimeError), \
        f"submit during the exit flush raised {raised}, expected RuntimeError"


# --- rule 10: bad arguments -----------------------------------------------------------------


async def _noop(items: list[int]) -> list[int]:
    return items


@pytest.mark.category("bad_input")
@pytest.mark.parametrize(("kwargs", "error"), [
    ({"max_batch_size": 0}, ValueError), ({"max_batch_size": -3}, ValueError),
    ({"max_concurrent_batches": 0}, ValueError), ({"max_wait": -0.5}, ValueError),
    ({"max_wait": math.nan}, ValueError), ({"max_wait": math.inf}, ValueError),
    ({"max_batch_size": 2.0}, TypeError), ({"max_batch_size": True}, TypeError),
    ({"max_concurrent_batches": "2"}, TypeError), ({"max_wait": "0.1"}, TypeError),
    ({"max_wait": None}, TypeError), ({"max_wait": True}, TypeError),
], ids=lambda v: v.__name__ if isinstance(v, type) else "-".join(f"{k}={v[k]!r}" for k in v))
def test_bad_arguments_are_refused(kwargs: dict[str, object], error: type[Exception]) -> None:
    """A bad max_batch_size, max_wait or max_concurrent_batches raises an error naming it."""
    args: dict[str, Any] = {"max_batch_size": 4, "max_wait": 0.1, **kwargs}
    with pytest.raises(error, match=next(iter(kwargs))):
        MicroBatcher(_noop, **args)


@pytest.mark.category("bad_input")
def test_boundary_arguments_are_accepted() -> None:
    """max_batch_size=1, max_wait=0 (int or float) and max_concurrent_batches=1 are valid."""
    for wait in (0, 0.0, 2):
        MicroBatcher(_noop, max_batch_size=1, max_wait=wait, max_concurrent_batches=1)


# --- performance ----------------------------------------------------------------------------


@_trio_only
@pytest.mark.category("performance")
@pytest.mark.points(2)
async def test_added_latency_at_low_load_is_exactly_max_wait() -> None:
    """At low load, each request waits exactly max_wait plus the time of process, no more."""
    rig = _Rig(size=32, wait=0.005, duration=0.002)
    arrivals = [0.0, 0.3, 1.7, 2.05, 9.1]
    await rig.run([(at, [k]) for k, at in enumerate(arrivals)])
    delays = [t - at for (t, _), at in zip(rig.calls, arrivals, strict=False)]
    assert len(rig.calls) == 5 and all(d == pytest.approx(0.005, abs=1e-9) for d in delays), \
        f"requests at {arrivals}, max_wait=0.005: dispatched {rig.calls}"


async def _checkpoint(_: int) -> None:
    await anyio.lowlevel.checkpoint()


class _Steps(trio.abc.Instrument):
    def __init__(self) -> None:
        self.count = 0

    def before_task_step(self, task: trio.lowlevel.Task) -> None:
        self.count += 1


def _scheduler_steps(n: int, batched: bool) -> int:
    async def process(items: list[int]) -> list[int]:
        await anyio.lowlevel.checkpoint()
        return items

    async def main() -> None:
        batcher = MicroBatcher(process, max_batch_size=64, max_wait=LONG)
        trio.lowlevel.add_instrument(steps)
        async with batcher, anyio.create_task_group() as tg:
            for i in range(n):
                tg.start_soon(batcher.submit if batched else _checkpoint, i)

    steps = _Steps()
    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    return steps.count


@pytest.mark.category("performance")
@pytest.mark.points(2)
def test_scheduler_work_per_item_is_a_small_multiple_of_a_checkpoint() -> None:
    """Per-item scheduler work is a small multiple of one checkpoint (no polling, no busy loop)."""
    n = 512
    batched, baseline = _scheduler_steps(n, batched=True), _scheduler_steps(n, batched=False)
    assert batched <= 4 * baseline, \
        f"{n} callers took {batched} task steps through the batcher, {baseline} for one " \
        f"checkpoint each: {batched / baseline:.1f}x, expected at most 4x"
