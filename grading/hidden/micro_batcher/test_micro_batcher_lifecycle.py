"""Hidden checks for micro_batcher, rule 8: leaving the block (with pending items, by an
exception, by cancellation), `submit` outside the block or during exit, entering twice."""

from __future__ import annotations

import anyio
import pytest
from micro_batcher import MicroBatcher
from micro_batcher_helpers import (
    LONG,
    Rig,
    W,
    anyio_backend,  # noqa: F401 (a fixture: trio on a virtual clock, and asyncio)
    leaves,
    noop,
    on_trio,
    quiesce,
    stuck_guard,
    trio_only,
)

pytestmark = [pytest.mark.anyio, pytest.mark.category("edge_cases")]


@trio_only
@pytest.mark.points(3)
async def test_leaving_dispatches_pending_items_at_once() -> None:
    """Leaving the block dispatches what is pending at once and delivers every result."""
    rig = Rig(size=4, wait=LONG, duration=1.0)
    left = await rig.run([(0.0, [0, 1, 2, 3, 4, 5])], leave_early=True)
    assert left == [], f"callers {left} were left without a result when the batcher closed"
    assert rig.calls == [(0.0, [0, 1, 2, 3]), (1.0, [4, 5])], \
        f"dispatched {rig.calls}; [4, 5] was pending at exit and should go when the slot frees"
    rig.returned(range(6))


@trio_only
@pytest.mark.points(2)
async def test_leaving_sends_every_pending_batch_without_waiting_for_its_window() -> None:
    """Leaving the block sends every pending batch as a slot frees, the last one included: none
    waits out its window."""
    rig = Rig(size=2, wait=100.0, duration=1.0)
    left = await rig.run([(0.0, [0, 1, 2, 3, 4])], leave_early=True)
    want = [(0.0, [0, 1]), (1.0, [2, 3]), (2.0, [4])]
    assert rig.calls == want, f"dispatched {rig.calls}, expected {want}: max_batch_size=2, " \
        f"max_wait=100, one slot, process takes 1 s, 0 to 4 arrive at 0 and the block is left " \
        f"at once (after leaving, no pending batch waits for its window)"
    assert left == [], f"callers {left} were left without a result when the batcher closed"
    rig.returned(range(5))


@pytest.mark.points(2)
async def test_leaving_by_an_exception_still_delivers_every_result(
        anyio_backend_name: str) -> None:
    """Leaving by an exception delivers every accepted item's result; the exception propagates."""
    rig, propagated = Rig(size=2, wait=LONG, concurrent=2, duration=W), None
    with stuck_guard():
        async with anyio.create_task_group() as tg:
            try:
                async with rig.batcher:
                    await rig.submit(tg, 0, 1, 2)
                    raise ZeroDivisionError("the block failed")
            except Exception as exc:
                propagated = exc
            await quiesce()
            tg.cancel_scope.cancel()
    if not isinstance(propagated, ZeroDivisionError):
        shown = leaves(propagated) if propagated is not None else None
        raise AssertionError(f"the block's ZeroDivisionError should propagate out of it "
                             f"as it is; got {propagated!r} ({shown})") from propagated
    rig.returned([0, 1, 2])


async def test_cancelling_the_block_ends_it(anyio_backend_name: str) -> None:
    """Cancelling the scope around the block ends it, whether the final drain is shielded or not."""
    rig = Rig(size=2, wait=LONG, duration=W)
    escaped: BaseException | None = None
    with stuck_guard():
        try:
            with anyio.CancelScope() as outer:
                async with anyio.create_task_group() as tg, rig.batcher:
                    await rig.submit(tg, 0, 1, 2)  # [0, 1] in flight, [2] pending
                    outer.cancel()
                    await anyio.sleep(LONG)
        except Exception as exc:
            escaped = exc
    if escaped is not None:
        raise AssertionError(f"cancelling the block raised {leaves(escaped)}") from escaped
    assert outer.cancelled_caught, "the block was cancelled, but the cancellation was swallowed"


@pytest.mark.points(1)
async def test_entering_twice_raises_runtime_error(anyio_backend_name: str) -> None:
    """Entering the batcher a second time, while open or once left, raises RuntimeError."""
    rig = Rig(size=2)
    async with rig.batcher:
        with pytest.raises(RuntimeError):
            async with rig.batcher:
                pass
    with pytest.raises(RuntimeError):
        async with rig.batcher:
            pass


async def test_async_with_gives_the_batcher_itself(anyio_backend_name: str) -> None:
    """`async with batcher as b` binds b to the batcher itself (__aenter__ returns self)."""
    batcher: MicroBatcher[int, int] = MicroBatcher(noop, max_batch_size=1, max_wait=LONG)
    with stuck_guard():
        async with batcher as entered:
            assert entered is batcher, \
                f"`async with MicroBatcher(...) as b` bound b to {entered!r}, expected the " \
                f"batcher itself (the statement's usage: `async with ... as batcher`)"
            got = await entered.submit(21)
    assert got == 21, f"submit(21) through `async with ... as b` returned {got!r}, expected 21"


@pytest.mark.points(1)
async def test_a_refused_second_entry_leaves_the_batcher_as_it_was(
        anyio_backend_name: str) -> None:
    """A refused second entry changes nothing: a pending item still gets its result, and once
    the block is left, submit still raises RuntimeError."""
    rig = Rig(size=2, wait=LONG)
    refused: list[BaseException | None] = []

    async def enter_again() -> None:
        try:
            async with rig.batcher:
                refused.append(None)
        except RuntimeError as exc:
            refused.append(exc)

    async with rig.open() as tg:
        await rig.submit(tg, 0)  # pending: the window is long, the batch not full
        await enter_again()
    assert refused[:1] != [None], "entering the batcher a second time while open was accepted"
    assert rig.outcomes.get(0) == ("returned", 0), \
        f"submit(0) was pending when a second entry was refused, and ended with " \
        f"{rig.outcomes.get(0)}, expected 0 from the exit flush: a refused entry must not " \
        f"touch the open batcher (its queue, its state)"
    await enter_again()
    outcome: object = "was accepted and waited for a result"
    with anyio.move_on_after(0.25 if not on_trio() else 60):  # the right answer raises at once
        try:
            await rig.batcher.submit(1)
            outcome = "returned"
        except RuntimeError:
            return
        except Exception as exc:
            outcome = f"raised {exc!r}"
    raise AssertionError(f"after the block was left and a second entry refused, submit(1) "
                         f"{outcome}, expected RuntimeError: a refused entry must not reopen "
                         f"the batcher")


async def test_submit_outside_the_block_raises_runtime_error(anyio_backend_name: str) -> None:
    """submit before the block is entered, or after it was left, raises RuntimeError."""
    rig = Rig(size=2)
    with pytest.raises(RuntimeError):
        await rig.batcher.submit(1)
    async with rig.batcher:
        pass
    with pytest.raises(RuntimeError):
        await rig.batcher.submit(2)


@trio_only
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
    with stuck_guard():
        async with anyio.create_task_group() as tg, batcher:
            tg.start_soon(batcher.submit, 1)
            await quiesce()
    assert len(raised) == 1 and isinstance(raised[0], RuntimeError), \
        f"submit during the exit flush raised {raised}, expected RuntimeError"


@pytest.mark.points(2)
async def test_a_drain_cut_short_by_cancellation_is_not_a_clean_exit(
        anyio_backend_name: str) -> None:
    """A cancellation that cuts the final drain short propagates out of the block: the code
    after it does not run as if every batch had finished."""
    left = anyio.Event()
    finished: list[int] = []
    after_block: list[str] = []

    async def process(items: list[int]) -> list[int]:
        await left.wait()  # the block has ended normally; its drain waits for this batch
        outer.cancel()  # an outer deadline hits the drain
        await anyio.sleep(W)  # cancelled here, unless the batcher shields its drain
        finished.append(1)
        return items

    batcher: MicroBatcher[int, int] = MicroBatcher(process, max_batch_size=1, max_wait=LONG)
    escaped: BaseException | None = None
    with stuck_guard():
        try:
            with anyio.CancelScope() as outer:
                async with anyio.create_task_group() as tg:
                    async with batcher:
                        tg.start_soon(batcher.submit, 0)
                        await quiesce()  # [0] is in process
                        left.set()
                    after_block.append("ran")
        except Exception as exc:
            escaped = exc
    if escaped is not None:
        raise AssertionError(f"cancelling the drain raised {leaves(escaped)}") from escaped
    assert not after_block or finished, \
        "the outer scope was cancelled while leaving the block waited for process: the batch " \
        "was cancelled, yet the block ended as if the drain had finished and the code after " \
        "it ran; the cancellation must propagate (or the drain be shielded, so the batch ends)"
    assert outer.cancelled_caught, "the drain was cancelled, but the cancellation was swallowed"
