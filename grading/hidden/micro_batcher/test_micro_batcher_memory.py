"""Hidden checks for micro_batcher: a batcher that runs for weeks lets go of what it delivered."""

from __future__ import annotations

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
