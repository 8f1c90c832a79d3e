"""Hidden checks for micro_batcher: a batcher that runs for weeks lets go of what it delivered."""

from __future__ import annotations

import contextlib
import gc
import weakref

import anyio
import pytest
from micro_batcher import MicroBatcher
from micro_batcher_helpers import (
    LONG,
    anyio_backend,  # noqa: F401 (a fixture: trio on a virtual clock, and asyncio)
    quiesce,
    stuck_guard,
)

pytestmark = pytest.mark.anyio

BATCHES, SIZE = 50, 4
KEPT = 4 * SIZE * 2  # the items and results of the last few batches may still be held


class _Payload:
    """An item or a result: an object whose life a weak reference can watch."""


async def test_delivered_items_and_results_are_let_go(anyio_backend_name: str) -> None:
    """Once a caller has its result, the batcher holds neither its item nor its result: what it
    keeps does not grow with the number of items it has delivered."""
    watched: list[weakref.ref[_Payload]] = []

    async def process(items: list[_Payload]) -> list[_Payload]:
        return [_Payload() for _ in items]

    async def call() -> None:
        item = _Payload()
        watched.append(weakref.ref(item))
        result = await batcher.submit(item)
        watched.append(weakref.ref(result))

    batcher: MicroBatcher[_Payload, _Payload] = MicroBatcher(process, max_batch_size=SIZE,
                                                             max_wait=LONG)
    with stuck_guard():
        async with anyio.create_task_group() as tg, batcher:
            for _ in range(BATCHES):
                for _ in range(SIZE):
                    tg.start_soon(call)
                await quiesce()
            gc.collect()
            alive = sum(ref() is not None for ref in watched)
    delivered = BATCHES * SIZE
    assert len(watched) == 2 * delivered, \
        f"{delivered} items submitted in full batches of {SIZE}: only " \
        f"{len(watched) - delivered} results came back"
    assert alive <= KEPT, \
        f"{delivered} items delivered in {BATCHES} batches of {SIZE}, every caller done with " \
        f"its item and result: the batcher still holds {alive} of those {2 * delivered} " \
        f"objects (at most {KEPT}, the last few batches, may stay); a server runs for weeks, " \
        f"so drop each entry once its caller has its result"


class _Failure(Exception):
    """The outcome of one item: an exception whose life a weak reference can watch."""


async def test_delivered_exceptions_are_let_go(anyio_backend_name: str) -> None:
    """Once a caller has had its exception raised, the batcher no longer holds it: failed
    deliveries are let go like results."""
    watched: list[weakref.ref[_Failure]] = []

    async def process(items: list[int]) -> list[_Failure]:
        failures = [_Failure(x) for x in items]
        watched.extend(weakref.ref(failure) for failure in failures)
        return failures

    async def call(item: int) -> None:
        with contextlib.suppress(_Failure):
            await batcher.submit(item)

    batcher: MicroBatcher[int, int] = MicroBatcher(process, max_batch_size=SIZE, max_wait=LONG)
    with stuck_guard():
        async with anyio.create_task_group() as tg, batcher:
            for k in range(BATCHES * SIZE):
                tg.start_soon(call, k)
                if k % SIZE == SIZE - 1:
                    await quiesce()
            gc.collect()
            alive = sum(ref() is not None for ref in watched)
    delivered = BATCHES * SIZE
    assert len(watched) == delivered, \
        f"{delivered} items submitted in full batches of {SIZE}: process was handed only " \
        f"{len(watched)} of them"
    assert alive <= KEPT, \
        f"{delivered} items delivered in {BATCHES} batches of {SIZE}, process returning an " \
        f"exception for each, every caller done with it: the batcher still holds {alive} of " \
        f"those {delivered} exceptions (at most {KEPT}, the last few batches, may stay); drop " \
        f"each outcome once its caller has it, an exception as well as a result"
