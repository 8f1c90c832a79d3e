"""Hidden checks for micro_batcher, rules 1 and 9: the two triggers, a window that never
restarts, no stale timer, and dispatch times that hold at every time scale."""

from __future__ import annotations

import anyio
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from micro_batcher_helpers import (
    LONG,
    Rig,
    W,
    anyio_backend,  # noqa: F401 (a fixture: trio on a virtual clock, and asyncio)
    model,
    on_trio,
    run_on_trio,
    stuck_guard,
    trio_only,
)

pytestmark = pytest.mark.anyio


@pytest.mark.points(2)
async def test_a_full_batch_is_dispatched_at_once(anyio_backend_name: str) -> None:
    """A batch that reaches max_batch_size is dispatched at once, not when its window ends."""
    rig = Rig(size=3, wait=LONG)
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1, 2, 3, 4, 5, 6)
        seen = rig.batches()
    assert seen == [[0, 1, 2], [3, 4, 5]], f"7 items, max_batch_size=3, a window of an hour: " \
        f"dispatched {seen} at once, expected [[0, 1, 2], [3, 4, 5]]"
    rig.returned(range(7))


@pytest.mark.points(2)
async def test_a_partial_batch_waits_exactly_max_wait(anyio_backend_name: str) -> None:
    """A partial batch is dispatched max_wait after its first item arrived (exactly, on trio)."""
    rig, trio = Rig(size=10), anyio_backend_name == "trio"  # asyncio: no real sleeping
    staggered = [(0.0, [0]), (W / 4, [1]), (W / 2, [2])]
    assert await rig.run(staggered if trio else [(0.0, [0, 1, 2])]) == []
    rig.returned([0, 1, 2])
    assert not trio or rig.calls == [(W, [0, 1, 2])], \
        f"dispatched {rig.calls}, expected [({W}, [0, 1, 2])]"


@trio_only
@pytest.mark.points(3)
async def test_the_window_does_not_restart_under_a_trickle() -> None:
    """The window starts at a batch's first item: a steady trickle does not starve the batch."""
    rig = Rig(size=100, wait=0.875)
    await rig.run([(0.25 * k, [k]) for k in range(12)])
    want = [(0.875, [0, 1, 2, 3]), (1.875, [4, 5, 6, 7]), (2.875, [8, 9, 10, 11])]
    assert rig.calls == want, \
        f"one item every 0.25 s, max_wait=0.875: dispatched {rig.calls}, expected {want}"


@trio_only
@pytest.mark.points(2)
async def test_a_size_flush_leaves_no_stale_timer() -> None:
    """After a size dispatch, the old window fires no empty or premature batch."""
    rig = Rig(size=2, wait=1.0)
    await rig.run([(0.0, [0]), (0.5, [1]), (0.75, [2])])
    want = [(0.5, [0, 1]), (1.75, [2])]
    assert rig.calls == want, f"dispatched {rig.calls}, expected {want}"


@trio_only
@pytest.mark.points(2)
@pytest.mark.parametrize("leftover", ["window_open", "window_over"])
async def test_leftover_items_keep_their_own_window(leftover: str) -> None:
    """Items left over when a full batch goes keep the window of their own first item."""
    # One slot: [0, 1] runs while 2, 3, 4 gather. When the slot frees, [2, 3] is full and goes;
    # [4] is left over. Its window began when 4 arrived, not when [2, 3] went: it goes when
    # that window ends, or when the slot frees again if the window is over by then.
    rig = Rig(size=2, concurrent=1, duration=W / 2 if leftover == "window_open" else 3 * W / 4)
    await rig.run([(0.0, [0, 1]), (W / 16, [2, 3, 4])])
    end = W / 16 + W if leftover == "window_open" else 2 * rig.duration
    want = [(0.0, [0, 1]), (rig.duration, [2, 3]), (end, [4])]
    assert rig.calls == want, f"max_batch_size=2, max_wait={W}, one slot, process takes " \
        f"{rig.duration}; 0, 1 at 0 and 2, 3, 4 at {W / 16}: dispatched {rig.calls}, " \
        f"expected {want} (the window of [4] began at {W / 16})"
    rig.returned(range(5))


@pytest.mark.points(3)
@pytest.mark.timeout(5)
async def test_later_batches_dispatch_on_time_after_a_timer_flush(anyio_backend_name: str) -> None:
    """After a batch dispatched by the timer, later batches still dispatch on time (no deadlock)."""
    rig = Rig(size=4, duration=W / 2)
    rig.t0 = anyio.current_time()
    # A deadlock fails here, after a virtual hour on trio, or 3 s (50 times the need) on asyncio.
    with stuck_guard(real=3.0):
        async with rig.batcher:
            got = [await rig.batcher.submit(i) for i in range(3)]  # one caller at a time
    assert got == [0, 10, 20], f"three submits one after another returned {got}"
    want = [(W, [0]), (2.5 * W, [1]), (4 * W, [2])]
    assert anyio_backend_name != "trio" or rig.calls == want, \
        f"dispatched {rig.calls}, expected {want}"


@pytest.mark.category("edge_cases")
@pytest.mark.parametrize(("size", "wait"), [(1, LONG), (10, 0)], ids=["size_1", "wait_0"])
async def test_degenerate_limits_send_every_item_at_once(size: int, wait: float) -> None:
    """max_batch_size=1, or max_wait=0, sends each item in a batch of its own as it arrives."""
    rig = Rig(size=size, wait=wait)
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1)
        seen = rig.batches()
    assert seen == [[0], [1]], f"max_batch_size={size}, max_wait={wait}: dispatched {seen}"
    rig.returned([0, 1])


@pytest.mark.category("edge_cases")
async def test_with_max_wait_0_items_gathered_while_the_slot_is_busy_go_together(
        anyio_backend_name: str) -> None:
    """With max_wait=0, the items that gathered while every slot was busy go as one batch."""
    rig = Rig(size=4, wait=0)
    rig.gate = anyio.Event()
    async with rig.open() as tg:
        await rig.submit(tg, 0)  # dispatched at once, held at the gate
        await rig.submit(tg, 1, 2, 3)  # pending while the slot is busy
        rig.gate.set()
        await rig.wait_for(range(4))
    assert rig.batches() == [[0], [1, 2, 3]], f"max_batch_size=4, max_wait=0, one slot: 0 " \
        f"went alone and 1, 2, 3 arrived while it ran: dispatched {rig.batches()}, expected " \
        f"[[0], [1, 2, 3]] (max_wait=0 sends whatever is pending in one batch)"
    rig.returned(range(4))


@settings(max_examples=40)
@given(gaps=st.lists(st.tuples(st.integers(0, 6), st.integers(1, 4)), min_size=1, max_size=12),
       size=st.integers(1, 5), eighths=st.integers(0, 7), leave_early=st.booleans())
@example(gaps=[(1, 1)] * 12, size=100, eighths=3, leave_early=False)  # a trickle
@example(gaps=[(0, 4), (1, 1)], size=1, eighths=0, leave_early=True)  # batches of one
@example(gaps=[(0, 3), (0, 2), (3, 2)], size=5, eighths=7, leave_early=False)  # full at once
@example(gaps=[(0, 4), (0, 3)], size=2, eighths=4, leave_early=True)  # exit with 3 pending
def test_dispatches_match_the_model(gaps: list[tuple[int, int]], size: int, eighths: int,
                                    leave_early: bool) -> None:
    """Dispatch times and batch contents match a model of the two triggers and the exit flush."""
    wait, at, groups, n = (2 * eighths + 1) / 8, 0.0, [], 0
    for gap, count in gaps:  # arrivals on a grid of 0.25 s; windows end between grid points
        at += gap / 4
        groups.append((at, list(range(n, n + count))))
        n += count
    rig = Rig(size=size, wait=wait)
    run_on_trio(rig, groups, leave_early)
    want = model(groups, size, wait, leave_early)
    assert rig.calls == want, f"arrivals {groups}, max_batch_size={size}, max_wait={wait}, " \
                              f"leave early: {leave_early}; dispatched {rig.calls}, expected {want}"
    rig.returned(range(n))


def _scaled_run(scale: float, gaps: list[int], cancels: list[int], size: int, eighths: int,
                concurrent: int, duration: float, leave_early: bool) -> Rig:
    """One run in units of `scale` seconds: arrivals on a grid of 0.25, windows of an odd
    number of eighths (ending between grid points), process taking `duration` units."""
    rig = Rig(size=size, wait=(2 * eighths + 1) / 8 * scale, concurrent=concurrent,
              duration=duration * scale)
    rig.horizon *= scale
    times = [sum(gaps[:k + 1]) / 4 * scale for k in range(len(gaps))]
    cancel_at = [(times[k] + c / 4 * scale, k) for k, c in enumerate(cancels) if c]
    run_on_trio(rig, [(t, [k]) for k, t in enumerate(times)], leave_early, cancel_at)
    return rig


@settings(max_examples=15)
@given(gaps=st.lists(st.integers(0, 4), min_size=1, max_size=14), data=st.data(),
       size=st.integers(1, 4), eighths=st.integers(0, 5), concurrent=st.integers(1, 2),
       duration=st.sampled_from([0.0, 0.3, 0.7, 1.9]), leave_early=st.booleans(),
       k=st.integers(-40, 40))
@example(gaps=[0, 1, 1, 2, 0, 3], data=None, size=2, eighths=2, concurrent=1, duration=0.7,
         leave_early=False, k=-40)
@example(gaps=[0, 1, 1, 2, 0, 3], data=None, size=2, eighths=2, concurrent=1, duration=0.7,
         leave_early=True, k=40)
@example(gaps=[1] * 8, data=None, size=8, eighths=1, concurrent=1, duration=0.3,
         leave_early=False, k=-20)
def test_dispatches_are_the_same_at_every_time_scale(
        gaps: list[int], data: st.DataObject | None, size: int, eighths: int, concurrent: int,
        duration: float, leave_early: bool, k: int) -> None:
    """Scaling every time (arrivals, max_wait, process time) by 2**k scales each dispatch time
    by 2**k and changes nothing else."""
    cancels = [0] * len(gaps) if data is None else data.draw(
        st.lists(st.integers(0, 3), min_size=len(gaps), max_size=len(gaps)), label="cancels")
    args = (gaps, cancels, size, eighths, concurrent, duration, leave_early)
    base, scaled = _scaled_run(1.0, *args), _scaled_run(2.0 ** k, *args)
    # Calls of process that start at the same instant may start in either order (trio shuffles
    # the tasks it wakes together): only the batches and their times are compared.
    want = sorted((t * 2.0 ** k, items) for t, items in base.calls)
    got = sorted(scaled.calls)
    assert got == want, \
        f"in units of 2**{k} s: dispatched {got}, expected {want} (the run in seconds " \
        f"scaled; max_batch_size={size}, max_wait={(2 * eighths + 1) / 8} units)"
    assert scaled.outcomes == base.outcomes, \
        f"in units of 2**{k} s the callers got {scaled.outcomes}, in seconds {base.outcomes}"


@pytest.mark.category("edge_cases")
async def test_a_max_batch_size_past_any_real_batch_is_valid(anyio_backend_name: str) -> None:
    """A max_batch_size as large as 2**64 ("no size limit") works: batches go by their window."""
    rig = Rig(size=2**64, wait=W)
    assert await rig.run([(0.0, [0, 1, 2])]) == []
    want = [(W, [0, 1, 2])]  # exact on trio; on asyncio's real clock the window may split them
    sent = [i for batch in rig.batches() for i in batch]
    assert sent == [0, 1, 2] and (not on_trio() or rig.calls == want), \
        f"max_batch_size=2**64, max_wait={W}, three items at 0: dispatched {rig.calls}, " \
        f"expected {want}"
    rig.returned([0, 1, 2])
