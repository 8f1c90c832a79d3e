"""Hidden checks for micro_batcher, rules 6 and 7: the concurrency limit, items gathering while
the slots are busy, and callers cancelled before and after dispatch."""

from __future__ import annotations

import math

import anyio
import kata_measure
import pytest
import trio
import trio.testing
from hypothesis import given, settings
from hypothesis import strategies as st
from micro_batcher import MicroBatcher
from micro_batcher_helpers import (
    LONG,
    Rig,
    SpawnTally,
    W,
    anyio_backend,  # noqa: F401 (a fixture: trio on a virtual clock, and asyncio)
    expect_returned,
    on_trio,
    quiesce,
    run_on_trio,
    stuck_guard,
    trio_only,
)

pytestmark = [pytest.mark.anyio, pytest.mark.category("concurrency")]


@pytest.mark.points(2)
@pytest.mark.parametrize("limit", [1, 3])
async def test_at_most_max_concurrent_batches_run_at_once(anyio_backend_name: str,
                                                          limit: int) -> None:
    """At most max_concurrent_batches calls of process run at once, and that many do."""
    rig = Rig(size=2, wait=LONG, concurrent=limit)
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


async def test_every_due_batch_goes_while_slots_are_free(anyio_backend_name: str) -> None:
    """Two full batches pending at once with two slots free both go at once, not one per
    wake-up of the batcher."""
    rig = Rig(size=2, wait=LONG, concurrent=2)
    rig.gate = anyio.Event()
    async with rig.open() as tg:
        await rig.submit_together(tg, 0, 1, 2, 3)
        running = rig.peak
        rig.gate.set()
    assert running == 2, f"max_batch_size=2, max_concurrent_batches=2, 4 callers started " \
        f"together: {running} call(s) of process ran at once before the first finished, " \
        f"expected 2 (both batches are full and a slot is free for each)"
    # Callers started together may be accepted in any order (trio shuffles them).
    assert sorted(sorted(batch) for batch in rig.batches()) in ([[0, 1], [2, 3]], [[0, 2], [1, 3]],
                                                               [[0, 3], [1, 2]]), \
        f"dispatched {rig.batches()}, expected two batches of 2 covering 0..3"
    rig.returned(range(4))


@trio_only
async def test_one_batch_runs_at_a_time_by_default() -> None:
    """Without max_concurrent_batches, one call of process runs at a time."""
    rig = Rig(size=2, wait=LONG, concurrent=None)
    rig.gate = anyio.Event()
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1, 2, 3)
        running = rig.peak
        rig.gate.set()
    assert running == rig.peak == 1, f"max_concurrent_batches not given, 2 full batches: " \
        f"{running} ran at once, expected 1"
    rig.returned(range(4))


@pytest.mark.points(2)
async def test_items_gather_while_the_slots_are_busy(anyio_backend_name: str) -> None:
    """Items arriving while every slot is busy gather into the next batch, sent when one frees."""
    # On asyncio (the real clock) no window ends within the check: the exit sends [4, 5, 6].
    rig = Rig(size=4, wait=W if on_trio() else LONG)
    rig.gate = anyio.Event()
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1, 2, 3)  # full: in flight until the gate opens
        await rig.submit(tg, 4, 5)
        if on_trio():
            await anyio.sleep(2 * W)  # the window of [4, 5] ends while the slot is busy
        await rig.submit(tg, 6)
        if on_trio():
            await anyio.sleep(2 * W)
        rig.gate.set()
        if on_trio():
            await rig.wait_for(range(7))
    assert rig.batches() == [[0, 1, 2, 3], [4, 5, 6]], f"dispatched {rig.batches()}"
    rig.returned(range(7))
    assert anyio_backend_name != "trio" or rig.calls[1][0] == 4 * W, \
        f"second batch at {rig.calls[1][0]}, expected {4 * W}: its window ended at {W}, the slot " \
        f"freed at {4 * W}"


@pytest.mark.points(2)
async def test_a_caller_cancelled_before_dispatch_withdraws_its_item(
        anyio_backend_name: str) -> None:
    """A caller cancelled before dispatch takes its item out: it is never processed."""
    rig = Rig(size=3, wait=LONG)
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1)
        rig.cancel(1)
        await quiesce()
        await rig.submit(tg, 2, 3)
        seen = rig.batches()
    assert seen == [[0, 2, 3]], f"0, 1 (cancelled), 2, 3 with max_batch_size=3: dispatched {seen}"
    rig.returned([0, 2, 3])


@pytest.mark.points(2)
async def test_withdrawing_an_item_keeps_the_others_in_order(anyio_backend_name: str) -> None:
    """A withdrawn item leaves the others in acceptance order (the hole is not refilled)."""
    rig = Rig(size=5, wait=LONG)
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1, 2, 3)
        rig.cancel(1)
        await quiesce()
        await rig.submit(tg, 4, 5)
        seen = rig.batches()
    assert seen == [[0, 2, 3, 4, 5]], \
        f"0, 1 (cancelled), 2, 3, 4, 5 with max_batch_size=5: dispatched {seen}"
    rig.returned([0, 2, 3, 4, 5])


async def test_equal_items_are_withdrawn_by_their_own_caller(anyio_backend_name: str) -> None:
    """Of two callers that submitted equal items, a cancelled one withdraws only its own."""
    calls: list[list[int]] = []
    got: dict[str, tuple[str, object]] = {}

    async def process(items: list[int]) -> list[int]:
        calls.append(list(items))
        return [10 * x for x in items]

    async def call(name: str, scope: anyio.CancelScope) -> None:
        with scope:
            try:
                got[name] = ("returned", await batcher.submit(5))
            except Exception as exc:
                got[name] = ("raised", exc)

    batcher: MicroBatcher[int, int] = MicroBatcher(process, max_batch_size=4, max_wait=LONG)
    first, second = anyio.CancelScope(), anyio.CancelScope()
    with stuck_guard():
        async with anyio.create_task_group() as tg:
            async with batcher:
                tg.start_soon(call, "first", first)
                await quiesce()
                tg.start_soon(call, "second", second)
                await quiesce()
                second.cancel()
                await quiesce()
            await quiesce()
            tg.cancel_scope.cancel()
    assert calls == [[5]], f"two callers submitted 5 and the second was cancelled: process got " \
                           f"{calls}, expected [[5]]"
    expect_returned("the first caller's submit(5)", got.get("first"), 50)


class _Elementwise:
    """What `==` on two arrays returns: a value with no truth value (numpy raises ValueError)."""

    def __bool__(self) -> bool:
        raise ValueError("the truth value of an array with more than one element is ambiguous")


class _Vector:
    """An item that behaves like a numpy array or a tensor: `==` is elementwise, no hash."""

    __hash__ = None  # type: ignore[assignment]  # unhashable, as numpy arrays are

    def __init__(self, name: str) -> None:
        self.name = name

    def __eq__(self, other: object) -> _Elementwise:  # type: ignore[override]
        return _Elementwise()

    def __repr__(self) -> str:
        return self.name


async def test_an_item_like_an_array_is_withdrawn_by_its_own_caller(
        anyio_backend_name: str) -> None:
    """A cancelled caller withdraws its own item also when items compare elementwise, as numpy
    arrays and tensors do: it is never processed."""
    calls: list[list[str]] = []
    got: dict[str, object] = {}

    async def process(items: list[_Vector]) -> list[str]:
        calls.append([item.name for item in items])
        return [item.name.lower() for item in items]

    async def call(item: _Vector, scope: anyio.CancelScope) -> None:
        with scope:
            try:
                got[item.name] = await batcher.submit(item)
            except Exception as exc:
                got[item.name] = exc

    batcher: MicroBatcher[_Vector, str] = MicroBatcher(process, max_batch_size=3, max_wait=LONG)
    scopes = {name: anyio.CancelScope() for name in "ABCD"}
    with stuck_guard():
        async with anyio.create_task_group() as tg:
            async with batcher:
                for name in "ABCD":
                    tg.start_soon(call, _Vector(name), scopes[name])
                    await quiesce()
                    if name == "B":
                        scopes["B"].cancel()
                        await quiesce()
            await quiesce()
            tg.cancel_scope.cancel()
    assert calls == [["A", "C", "D"]], \
        f"items A, B, C, D like numpy arrays (== is elementwise and has no truth value), " \
        f"max_batch_size=3, B's caller cancelled before C arrived: process got {calls}, " \
        f"expected [['A', 'C', 'D']]; find the caller's own entry by identity, never by =="
    assert got == {"A": "a", "C": "c", "D": "d"}, \
        f"the callers ended with {got}, expected A, C and D to get a, c and d (B cancelled)"


@pytest.mark.points(3)
async def test_a_caller_cancelled_after_dispatch_does_not_disturb_the_others(
        anyio_backend_name: str) -> None:
    """A caller cancelled after dispatch leaves the rest of its batch to get their results."""
    # On asyncio (the real clock) no window ends within the check: the exit sends [3].
    rig = Rig(size=3, wait=W if on_trio() else LONG)
    rig.gate = anyio.Event()
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1, 2)  # full: dispatched, held at the gate
        rig.cancel(1)
        await quiesce()
        rig.gate.set()
        await rig.wait_for([0, 2])
        await rig.submit(tg, 3)
        if on_trio():
            await rig.wait_for([3])
    assert rig.batches() == [[0, 1, 2], [3]], f"dispatched {rig.batches()}"
    rig.returned([0, 2, 3])
    assert 1 not in rig.outcomes, \
        f"the cancelled caller of 1 ended with {rig.outcomes[1]}, expected its cancellation"


@trio_only
async def test_cancelling_every_caller_leaves_no_empty_batch() -> None:
    """Cancelling every caller of a pending batch sends nothing; the next item gets a new window."""
    rig = Rig(size=3, wait=1.0)
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1)
        rig.cancel(0, 1)
        await anyio.sleep(0.75)
        await rig.submit(tg, 2)
        await rig.wait_for([2])
    assert rig.calls == [(1.75, [2])], f"dispatched {rig.calls}, expected [(1.75, [2])]"


@trio_only
async def test_a_full_batch_that_loses_a_caller_while_the_slots_are_busy_waits_for_its_window(
        ) -> None:
    """A batch due by size while every slot is busy that loses a caller before a slot frees is
    no longer due: it goes when its window ends, not the moment the slot frees."""
    rig = Rig(size=3, wait=W)
    rig.gate = anyio.Event()
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1, 2)  # full: in flight until the gate opens
        await anyio.sleep(W / 8)
        await rig.submit(tg, 3, 4, 5)  # full while the slot is busy: due by size
        await anyio.sleep(W / 8)
        rig.cancel(4)  # [3, 5]: no longer full; its window ends at W / 8 + W
        await quiesce()
        await anyio.sleep(W / 4)
        rig.gate.set()  # the slot frees at W / 2
        await rig.wait_for([0, 1, 2, 3, 5])
    want = [(0.0, [0, 1, 2]), (1.125 * W, [3, 5])]
    assert rig.calls == want, (
        f"max_batch_size=3, max_wait={W}, one slot busy from 0 to {W / 2}: 3, 4, 5 arrive at "
        f"{W / 8}, the caller of 4 is cancelled at {W / 4}: dispatched {rig.calls}, expected "
        f"{want} (a batch that lost a caller is due by its window, not when the slot frees)")
    rig.returned([0, 1, 2, 3, 5])


@trio_only
@pytest.mark.points(2)
@pytest.mark.parametrize("withdrawn", ["second", "first"])
async def test_withdrawing_an_item_does_not_restart_the_window(withdrawn: str) -> None:
    """Withdrawing an item does not restart the window: the batch keeps its deadline."""
    # 0 arrives at 0 and 1 at W/4; one of them is withdrawn at W/2. Withdrawing 1 leaves the
    # window of 0 as it was. Withdrawing the head 0 may keep its deadline or start the window
    # at 1's arrival (the statement allows both), but not at the moment of the withdrawal.
    rig = Rig(size=4, wait=W)
    gone, left = (1, 0) if withdrawn == "second" else (0, 1)
    await rig.run([(0.0, [0]), (W / 4, [1])], cancels=[(W / 2, gone)])
    allowed = [[(W, [left])]] if withdrawn == "second" else [[(W, [1])], [(1.25 * W, [1])]]
    assert rig.calls in allowed, f"max_wait={W}: 0 at 0, 1 at {W / 4}, the caller of {gone} " \
        f"cancelled at {W / 2}: dispatched {rig.calls}, expected " + " or ".join(map(str, allowed))
    rig.returned([left])


@settings(max_examples=20)
@given(st.lists(st.integers(0, 3), min_size=1, max_size=25), st.integers(1, 4),
       st.integers(1, 3), st.sampled_from([0.0, W / 2, 2 * W]))
def test_every_item_is_processed_once_in_order_under_load(
        gaps: list[int], size: int, limit: int, duration: float) -> None:
    """Under any load, each item is processed once, in order, within the limits, for its caller."""
    rig = Rig(size=size, concurrent=limit, duration=duration)
    run_on_trio(rig, [(sum(gaps[:k + 1]) * W / 4, [k]) for k in range(len(gaps))])
    flat = [i for batch in sorted(rig.batches()) for i in batch]  # concurrent batches may start
    assert flat == list(range(len(gaps))), f"process saw {rig.batches()}"  # in any order
    assert all(0 < len(b) <= size for b in rig.batches()), f"batch sizes: {rig.batches()}"
    assert rig.peak <= limit, f"{rig.peak} process calls at once, limit {limit}"
    rig.returned(range(len(gaps)))


@trio_only
async def test_a_window_whose_items_were_all_withdrawn_sends_nothing() -> None:
    """When every item of a pending batch is withdrawn, its window's end sends nothing at all."""
    rig = Rig(size=3, wait=1.0)
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1)
        await anyio.sleep(0.25)
        rig.cancel(0, 1)
        await anyio.sleep(2.0)  # well past the old deadline of 1.0
        await rig.submit(tg, 2)
        await rig.wait_for([2])
    assert rig.calls == [(3.25, [2])], f"0 and 1 at 0, both withdrawn at 0.25, 2 at 2.25, " \
        f"max_wait=1.0: dispatched {rig.calls}, expected only [(3.25, [2])] (no empty batch)"


def _tasks_spawned(limit: int, budget: float = math.inf) -> int:
    """Tasks spawned while 4 callers go through a batcher of max_batch_size=2 whose process
    takes 1 s, with `limit` slots (two batches, so two slots are all any limit >= 2 can use)."""
    rig = Rig(size=2, wait=LONG, concurrent=limit, duration=1.0)
    spawned = SpawnTally(budget)

    async def main() -> None:
        trio.lowlevel.add_instrument(spawned)
        with trio.CancelScope() as spawned.scope:
            await rig.run([(0.0, [0, 1, 2, 3])])

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    if spawned.count <= budget:
        rig.returned(range(4))
    return spawned.count


def test_a_huge_max_concurrent_batches_costs_no_more_than_a_small_one() -> None:
    """A max_concurrent_batches as large as you like is valid, and costs no more than 2 slots
    (no task or worker per slot)."""
    small = _tasks_spawned(2)
    huge = _tasks_spawned(2**8, budget=4 * small)
    kata_measure.count(2 * small, huge, label="count: tasks spawned")
    assert huge <= 2 * small, \
        f"with max_concurrent_batches=2**8 the run spawned {huge} tasks, with 2 only {small}, " \
        f"for the same 4 callers and 2 batches: any int >= 1 is valid however large, so the " \
        f"cost may not grow with the limit (a worker per slot, started up front?)"
