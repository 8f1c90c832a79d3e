"""Hidden checks for micro_batcher: added latency at low load, and scheduler work per item."""

from __future__ import annotations

import math

import anyio
import anyio.lowlevel
import kata_measure
import pytest
import trio
import trio.testing
from micro_batcher import MicroBatcher
from micro_batcher_helpers import (
    LONG,
    Rig,
    StepTally,
    anyio_backend,  # noqa: F401 (a fixture: trio on a virtual clock, and asyncio)
    trio_only,
)

pytestmark = [pytest.mark.category("performance"), pytest.mark.points(2)]


@trio_only
@pytest.mark.anyio
async def test_added_latency_at_low_load_is_exactly_max_wait() -> None:
    """At low load, each request waits exactly max_wait plus the time of process, no more."""
    rig = Rig(size=32, wait=0.005, duration=0.002)
    arrivals = [0.0, 0.3, 1.7, 2.05, 9.1]
    await rig.run([(at, [k]) for k, at in enumerate(arrivals)])
    delays = [t - at for (t, _), at in zip(rig.calls, arrivals, strict=False)]
    assert len(rig.calls) == 5 and all(d == pytest.approx(0.005, abs=1e-9) for d in delays), \
        f"requests at {arrivals}, max_wait=0.005: dispatched {rig.calls}"


async def _checkpoint(_: int) -> None:
    await anyio.lowlevel.checkpoint()


def _scheduler_steps(n: int, batched: bool, size: int = 64, wait: float = LONG,
                     budget: float = math.inf) -> int:
    async def process(items: list[int]) -> list[int]:
        await anyio.lowlevel.checkpoint()
        return items

    async def main() -> None:
        batcher = MicroBatcher(process, max_batch_size=size, max_wait=wait)
        trio.lowlevel.add_instrument(steps)
        with trio.CancelScope() as steps.scope:
            async with batcher, anyio.create_task_group() as tg:
                for i in range(n):
                    tg.start_soon(batcher.submit if batched else _checkpoint, i)

    steps = StepTally(budget)
    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))
    return steps.count


def test_scheduler_work_per_item_is_a_small_multiple_of_a_checkpoint() -> None:
    """Per-item scheduler work is a small multiple of one checkpoint (no polling, no busy loop)."""
    n = 512
    baseline = _scheduler_steps(n, batched=False)
    batched = _scheduler_steps(n, batched=True, budget=8 * baseline)
    kata_measure.count(4 * baseline, batched, label="count: task steps")
    assert batched <= 4 * baseline, \
        f"{n} callers took {batched} task steps through the batcher, {baseline} for one " \
        f"checkpoint each: {batched / baseline:.1f}x, expected at most 4x"


def test_a_finished_batch_wakes_only_its_own_callers() -> None:
    """Scheduler work per item stays small with hundreds of callers waiting (no broadcast wake)."""
    n = 512  # batches of one, so hundreds of callers wait while each batch runs
    baseline = _scheduler_steps(n, batched=False)
    batched = _scheduler_steps(n, batched=True, size=1, wait=0.0, budget=16 * baseline)
    kata_measure.count(8 * baseline, batched, label="count: task steps")
    assert batched <= 8 * baseline, \
        f"{n} callers in batches of one took {batched} task steps through the batcher, " \
        f"{baseline} for one checkpoint each: {batched / baseline:.1f}x, expected at most 8x " \
        f"(does every finished batch wake every waiting caller?)"
