"""Reference solution for micro_batcher: async dynamic batching on anyio (asyncio and trio).

One dispatcher task owns every timing decision: it sleeps until the head batch is due (full,
its window over, or the batcher closing), waits for a free slot, then cuts the batch and hands
it to a batch task.
Because the batch is cut at the moment a slot frees, items keep gathering while the slots are
busy, and a caller cancelled before the cut simply leaves the queue.
Callers never run `process` themselves, so cancelling one caller never touches a batch.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, Self, TypeVar

import anyio
from anyio.abc import TaskGroup

T = TypeVar("T")
R = TypeVar("R")

__all__ = ["BatchError", "MicroBatcher"]

_NEW, _OPEN, _CLOSING = "new", "open", "closing"


class BatchError(Exception):
    """`process` broke its contract: it returned the wrong number of results for a batch."""


class _Slot(Generic[T, R]):
    """One accepted item and, once its batch has run, its outcome."""

    __slots__ = ("arrived", "dispatched", "done", "error", "item", "value")
    value: R

    def __init__(self, item: T, arrived: float) -> None:
        self.item = item
        self.arrived = arrived
        self.dispatched = False
        self.done = anyio.Event()
        self.error: BaseException | None = None

    def settle(self, outcome: R | BaseException) -> None:
        if isinstance(outcome, BaseException):
            self.error = outcome
        else:
            self.value = outcome
        self.done.set()


def _check_count(name: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    if value < 1:
        raise ValueError(f"{name} must be >= 1, got {value}")
    return value


def _count_error(results: object, expected: int) -> BatchError | None:
    """The BatchError for results that are not `expected` of them (or have no length at all)."""
    try:
        received = len(results)  # type: ignore[arg-type]  # process may break its contract
    except TypeError:
        return BatchError(f"process returned {type(results).__name__}, not a sequence of "
                          f"{expected} results")
    if received == expected:
        return None
    return BatchError(f"process returned {received} results for a batch of {expected} items "
                      f"(expected {expected}, received {received})")


class MicroBatcher(Generic[T, R]):
    """Gathers concurrent `submit` calls into batches for one call of `process` each.

    A batch is dispatched when it holds `max_batch_size` items, or `max_wait` seconds after its
    first item arrived, whichever comes first; at most `max_concurrent_batches` calls of
    `process` run at once.
    Use it as an async context manager: leaving the block dispatches what is pending at once
    and waits for every batch in flight.

    Raises:
        TypeError: a `process` that is not callable, a count that is not an int (bool included),
            or a `max_wait` that is not a number.
        ValueError: `max_batch_size < 1`, `max_concurrent_batches < 1`, or a `max_wait` that is
            negative or not finite (an int past the float range included).
    """

    def __init__(
        self,
        process: Callable[[list[T]], Awaitable[Sequence[R | BaseException]]],
        *,
        max_batch_size: int,
        max_wait: float,
        max_concurrent_batches: int = 1,
    ) -> None:
        if not callable(process):
            raise TypeError(f"process must be callable, got {type(process).__name__}")
        self._max_batch_size = _check_count("max_batch_size", max_batch_size)
        self._max_concurrent = _check_count("max_concurrent_batches", max_concurrent_batches)
        if isinstance(max_wait, bool) or not isinstance(max_wait, int | float):
            raise TypeError(f"max_wait must be a number, got {type(max_wait).__name__}")
        try:
            wait = float(max_wait)
        except OverflowError:  # an int past the float range: as good as infinite
            raise ValueError("max_wait must be a finite number >= 0, got an int too large "
                             "for a float") from None
        if not math.isfinite(wait) or wait < 0:
            raise ValueError(f"max_wait must be a finite number >= 0, got {max_wait}")
        self._max_wait = wait
        self._process = process
        # Invariants:
        # - _pending holds the accepted, undispatched items in acceptance order; every one of
        #   them has a caller waiting on it (a cancelled caller removes its own item).
        # - the head batch is _pending[:max_batch_size]; its window ends at
        #   _pending[0].arrived + max_wait, so it never restarts while items keep arriving.
        # - the dispatcher is the only task that removes items from _pending in bulk, and holds
        #   one _slots token per batch task until that task has settled every item.
        self._pending: deque[_Slot[T, R]] = deque()
        self._state = _NEW
        self._tg: TaskGroup
        self._slots: anyio.Semaphore
        self._changed: anyio.Event

    async def __aenter__(self) -> Self:
        if self._state != _NEW:
            raise RuntimeError("a MicroBatcher can be entered only once")
        self._slots = anyio.Semaphore(self._max_concurrent)
        self._changed = anyio.Event()
        self._tg = anyio.create_task_group()
        await self._tg.__aenter__()
        self._tg.start_soon(self._dispatch_loop)
        self._state = _OPEN
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        # Stop intake, then let the dispatcher flush everything pending and the task group wait
        # for the batches in flight. A body's exception propagates after that (we return None).
        self._state = _CLOSING
        self._wake()
        await self._tg.__aexit__(None, None, None)

    async def submit(self, item: T) -> R:
        """Add `item` to the next batch and return its result once that batch has run.

        Raises:
            RuntimeError: the batcher has not been entered, or has begun to exit.
            BatchError: `process` returned the wrong number of results for this batch, or no
                sequence at all.
            Exception: whatever `process` raised for this batch, or returned for this item.
        """
        if self._state != _OPEN:
            raise RuntimeError(
                "submit() needs an open MicroBatcher: use it inside `async with batcher:`"
            )
        slot: _Slot[T, R] = _Slot(item, anyio.current_time())
        self._pending.append(slot)
        if len(self._pending) in (1, self._max_batch_size):
            self._wake()  # a new window opens, or the head batch is full
        try:
            await slot.done.wait()
        except BaseException:
            if not slot.dispatched:
                self._pending.remove(slot)  # withdrawn: it is never processed
            raise
        if slot.error is not None:
            raise slot.error
        return slot.value

    def _wake(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    def _due(self) -> bool:
        if not self._pending:
            return False
        return (
            len(self._pending) >= self._max_batch_size
            or self._state != _OPEN
            or anyio.current_time() >= self._pending[0].arrived + self._max_wait
        )

    async def _dispatch_loop(self) -> None:
        while True:
            if self._due():
                await self._slots.acquire()
                if self._due():  # still due: the head may have been withdrawn meanwhile
                    self._tg.start_soon(self._run, self._cut())
                else:
                    self._slots.release()
            elif self._state != _OPEN and not self._pending:
                return
            else:
                # Sleep until the head's window ends or a submit / close wakes us; then look
                # again. Nothing is dispatched from inside this scope.
                deadline = self._pending[0].arrived + self._max_wait if self._pending else math.inf
                changed = self._changed
                with anyio.CancelScope(deadline=deadline):
                    await changed.wait()

    def _cut(self) -> list[_Slot[T, R]]:
        count = min(self._max_batch_size, len(self._pending))
        batch = [self._pending.popleft() for _ in range(count)]
        for slot in batch:
            slot.dispatched = True
        return batch

    async def _run(self, batch: list[_Slot[T, R]]) -> None:
        try:
            try:
                results = await self._process([slot.item for slot in batch])
            except Exception as exc:  # this batch's callers get it; the batcher keeps serving
                for slot in batch:
                    slot.settle(exc)
                return
            error = _count_error(results, len(batch))
            if error is not None:
                for slot in batch:
                    slot.settle(error)
                return
            for slot, outcome in zip(batch, results, strict=True):
                slot.settle(outcome)
        finally:
            self._slots.release()
