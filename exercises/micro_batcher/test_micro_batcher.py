"""Visible tests for micro_batcher: the statement's worked examples and two properties.

Run them with `uv run pytest exercises/micro_batcher`. Timing runs on trio's virtual clock
(`MockClock(autojump_threshold=0)`): `anyio.sleep(0.010)` returns at once, exactly 10 ms later in
virtual time, so dispatch times are asserted exactly and nothing waits for real.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import anyio
import pytest
import trio
import trio.testing
from anyio.abc import TaskGroup
from hypothesis import example, given, settings
from hypothesis import strategies as st
from micro_batcher import MicroBatcher

pytestmark = pytest.mark.anyio
MS = 0.001


@pytest.fixture
def anyio_backend() -> tuple[str, dict[str, Any]]:
    """Trio on a fresh virtual clock for every test."""
    return ("trio", {"clock": trio.testing.MockClock(autojump_threshold=0)})


class _Server:
    """A recording `process` (it doubles each item) and one caller task per request."""

    def __init__(self, *, size: int, wait: float, duration: float = 0.0) -> None:
        self.calls: list[tuple[float, list[int]]] = []  # (virtual time, items) per process call
        self.got: dict[int, object] = {}  # item -> its caller's result or exception
        self.duration = duration
        self.batcher: MicroBatcher[int, int] = MicroBatcher(
            self._process, max_batch_size=size, max_wait=wait)

    async def _process(self, items: list[int]) -> list[int | BaseException]:
        self.calls.append((anyio.current_time(), list(items)))
        await anyio.sleep(self.duration)
        if 13 in items:
            raise KeyError("unlucky batch")
        return [ValueError(f"bad item {x}") if x < 0 else 2 * x for x in items]

    async def _call(self, item: int) -> None:
        try:
            self.got[item] = await self.batcher.submit(item)
        except Exception as exc:
            self.got[item] = exc

    async def request(self, tg: TaskGroup, at: float, *items: int) -> None:
        """At virtual time `at`, start one caller per item, in this order."""
        await anyio.sleep_until(at)
        for item in items:
            tg.start_soon(self._call, item)
            await anyio.wait_all_tasks_blocked()  # accepted before the next one starts

    async def serve(self, arrivals: Sequence[tuple[float, Sequence[int]]]) -> None:
        """Run the requests; fail if anything is still waiting after an hour of virtual time."""
        with anyio.move_on_after(3600) as guard:
            async with self.batcher, anyio.create_task_group() as tg:
                for at, items in arrivals:
                    await self.request(tg, at, *items)
        if guard.cancelled_caught:
            pytest.fail(f"callers still waiting after an hour of virtual time (a deadlock?); "
                        f"process calls so far: {self.calls}, results: {self.got}")


def _times(calls: list[tuple[float, list[int]]]) -> list[tuple[float, list[int]]]:
    return [(round(t / MS, 6), items) for t, items in calls]  # in ms, rounding float noise


async def test_a_full_batch_is_dispatched_at_once() -> None:
    """Worked example 1: three requests fill a batch of three and go at once, not after 10 ms."""
    server = _Server(size=3, wait=10 * MS)
    await server.serve([(0.0, [1, 2, 3])])
    assert _times(server.calls) == [(0.0, [1, 2, 3])], f"process calls (ms): {server.calls}"
    assert server.got == {1: 2, 2: 4, 3: 6}, f"callers got {server.got}"


async def test_the_timeline_of_the_statement() -> None:
    """Worked example 2: size and timer triggers, a window that never restarts."""
    server = _Server(size=3, wait=10 * MS, duration=2 * MS)
    await server.serve([(0.0, [1]), (4 * MS, [2]), (8 * MS, [3]), (9 * MS, [4]),
                        (15 * MS, [5]), (30 * MS, [6])])
    want = [(8.0, [1, 2, 3]), (19.0, [4, 5]), (40.0, [6])]
    assert _times(server.calls) == want, f"process calls (ms): {_times(server.calls)}"
    assert server.got == {i: 2 * i for i in range(1, 7)}, f"callers got {server.got}"


async def test_errors_reach_only_their_own_callers() -> None:
    """Worked example 3: a raising batch fails its callers; a returned exception fails one."""
    server = _Server(size=2, wait=10 * MS)
    await server.serve([(0.0, [13, 1]), (1 * MS, [-5, 7])])
    for x in (13, 1):
        got = server.got[x]
        assert isinstance(got, KeyError) and got.args == ("unlucky batch",), \
            f"submit({x}) in the batch whose process raised KeyError got {got!r}"
    assert isinstance(server.got[-5], ValueError) and server.got[7] == 14, \
        f"batch [-5, 7] with a returned ValueError at 0: callers got {server.got}"


async def test_submit_outside_the_block_raises_runtime_error() -> None:
    """submit before `async with` is entered raises RuntimeError."""
    server = _Server(size=2, wait=10 * MS)
    with pytest.raises(RuntimeError):
        await server.batcher.submit(1)


def _model(arrivals: Sequence[tuple[float, Sequence[int]]], size: int,
           wait: float) -> list[tuple[float, list[int]]]:
    """The rules on paper, for a `process` that takes no time: (dispatch time, batch)."""
    out: list[tuple[float, list[int]]] = []
    pending: list[tuple[float, int]] = []  # (arrival, item), not yet dispatched

    def timers_before(t: float) -> None:
        while pending and pending[0][0] + wait < t:
            out.append((pending[0][0] + wait, [i for _, i in pending[:size]]))
            del pending[:size]

    for at, items in arrivals:
        timers_before(at)
        for item in items:
            pending.append((at, item))
            if len(pending) == size:
                out.append((at, [i for _, i in pending]))
                pending.clear()
    timers_before(math.inf)
    return out


def _serve(server: _Server, arrivals: Sequence[tuple[float, Sequence[int]]]) -> None:
    async def main() -> None:
        await server.serve(arrivals)

    trio.run(main, clock=trio.testing.MockClock(autojump_threshold=0))


@settings(max_examples=25)
@given(gaps=st.lists(st.tuples(st.integers(0, 5), st.integers(1, 3)), min_size=1, max_size=10),
       size=st.integers(1, 4), wait=st.sampled_from([0.125, 0.375, 0.625, 1.125]))
@example(gaps=[(1, 1)] * 8, size=10, wait=0.625)  # a steady trickle must not starve a batch
def test_dispatches_match_the_model(gaps: list[tuple[int, int]], size: int, wait: float) -> None:
    """Dispatch times and batches match the model of the two triggers."""
    arrivals, at, n = [], 0.0, 0
    for gap, count in gaps:  # arrivals on a 0.25 s grid, windows end between grid points
        at += gap / 4
        arrivals.append((at, [n + k for k in range(count)]))
        n += count
    server = _Server(size=size, wait=wait)
    _serve(server, arrivals)
    want = _model(arrivals, size, wait)
    assert server.calls == want, f"arrivals {arrivals}, max_batch_size={size}, max_wait={wait}: " \
                                 f"dispatched {server.calls}, expected {want}"


@settings(max_examples=25)
@given(items=st.lists(st.integers(-3, 12), min_size=1, max_size=16,
                      unique=True), size=st.integers(1, 6))
def test_every_caller_gets_its_own_result(items: list[int], size: int) -> None:
    """Every caller gets the result for its own item, whatever the batch boundaries."""
    server = _Server(size=size, wait=0.5)
    _serve(server, [(0.0, items)])
    for x in items:
        got = server.got[x]
        ok = isinstance(got, ValueError) and str(x) in str(got) if x < 0 else got == 2 * x
        assert ok, f"submit({x}) returned {got!r}; batches were {server.calls}"
    assert sorted(i for _, batch in server.calls for i in batch) == sorted(items), \
        f"each item is processed exactly once: {server.calls}"
