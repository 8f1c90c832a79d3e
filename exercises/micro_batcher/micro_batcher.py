"""micro_batcher: gather concurrent requests into batches for one call each (anyio).

Fill in every body marked `raise NotImplementedError`; keep the names and signatures.
See README.md for the rules. Runs on asyncio and on trio through anyio.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Generic, Self, TypeVar

T = TypeVar("T")
R = TypeVar("R")

__all__ = ["BatchError", "MicroBatcher"]


class BatchError(Exception):
    """`process` broke its contract: it returned the wrong number of results for a batch.

    The message names both numbers: how many results were expected and how many came back.
    """


class MicroBatcher(Generic[T, R]):
    """Gathers concurrent `submit` calls into batches for one call of `process` each.

    A batch is dispatched when it holds `max_batch_size` items, or `max_wait` seconds after its
    first item arrived, whichever comes first (the window never restarts when later items
    arrive). At most `max_concurrent_batches` calls of `process` run at once; meanwhile new
    items gather into the next batch.

    >>> async def double(items: list[int]) -> list[int]:
    ...     return [2 * x for x in items]
    >>> async def main() -> int:
    ...     async with MicroBatcher(double, max_batch_size=32, max_wait=0.005) as batcher:
    ...         return await batcher.submit(21)   # 42, about 5 ms later
    """

    def __init__(
        self,
        process: Callable[[list[T]], Awaitable[Sequence[R | BaseException]]],
        *,
        max_batch_size: int,
        max_wait: float,
        max_concurrent_batches: int = 1,
    ) -> None:
        """Check the arguments; nothing runs until the batcher is entered.

        `process` receives the items of one batch in the order they were accepted, as a list
        of its own (it may change it), and returns one result per item, in the same order; a
        result that is an exception instance is raised in that item's caller only.

        Raises:
            TypeError: `process` is not callable, `max_batch_size` or `max_concurrent_batches`
                is not an int (a bool is not an int here), or `max_wait` is not a number (int
                or float, not bool).
            ValueError: `max_batch_size < 1`, `max_concurrent_batches < 1`, or `max_wait` is
                negative, NaN, infinite, or an int too large for a float.
        """
        raise NotImplementedError("MicroBatcher.__init__ is not written yet")

    async def __aenter__(self) -> Self:
        """Start accepting items (and the background work that dispatches them); return self.

        Raises:
            RuntimeError: the batcher was already entered once (it is open, or was left).
        """
        raise NotImplementedError("MicroBatcher.__aenter__ is not written yet")

    async def __aexit__(self, *exc_info: object) -> None:
        """Stop intake, dispatch everything pending at once, and wait for every batch in flight.

        Every accepted item gets its result, also when the block is left by an exception, which
        then propagates (this method never suppresses it).
        """
        raise NotImplementedError("MicroBatcher.__aexit__ is not written yet")

    async def submit(self, item: T) -> R:
        """Add `item` to the next batch and return its own result once that batch has run.

        If the caller is cancelled before the item is dispatched, the item leaves the batch and
        is never processed; a caller cancelled after dispatch does not disturb the others.

        Raises:
            RuntimeError: the batcher has not been entered yet, or has begun to exit.
            BatchError: `process` returned the wrong number of results for this batch, or
                something without a length (such as None).
            Exception: whatever `process` raised for this batch, or returned for this item.
        """
        raise NotImplementedError("MicroBatcher.submit is not written yet")
