"""Lazy-refill token bucket and a per-key limiter: your solution goes here.

Read README.md beside this file for the rules; `python grader.py token_bucket` grades this file.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass

__all__ = ["Decision", "KeyedLimiter", "TokenBucket"]


@dataclass(frozen=True)
class Decision:
    """The answer to one request: allowed, or when to come back."""

    allowed: bool
    retry_after: float  # seconds; 0.0 when allowed


class TokenBucket:
    """A bucket of `capacity` tokens refilled at `rate` tokens per second of `clock` time.

    A new bucket is full. Refill is lazy (computed on each call, no thread, no timer) and never
    exceeds `capacity`. Thread-safe.

    Raises:
        TypeError: `capacity` or `rate` is not a number (or is a bool).
        ValueError: `capacity` or `rate` is not a finite number > 0.
    """

    def __init__(self, capacity: float, rate: float, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        raise NotImplementedError("TokenBucket.__init__")

    def try_acquire(self, tokens: float = 1.0) -> Decision:
        """Take `tokens` if available now; otherwise take nothing and say how long to wait.

        Allowed: the tokens are deducted and `retry_after == 0.0`. Refused: nothing is deducted
        and `retry_after` is the wait after which the same request succeeds (no other traffic).

        Raises:
            TypeError: `tokens` is not a number (or is a bool).
            ValueError: `tokens` is not finite, not > 0, or more than `capacity`.
        """
        raise NotImplementedError("TokenBucket.try_acquire")

    def available(self) -> float:
        """Tokens available now, after the lazy refill."""
        raise NotImplementedError("TokenBucket.available")


class KeyedLimiter:
    """One independent `TokenBucket` per key, holding in memory only buckets that are not full.

    Raises:
        TypeError, ValueError: as `TokenBucket`.
    """

    def __init__(self, capacity: float, rate: float, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        raise NotImplementedError("KeyedLimiter.__init__")

    def try_acquire(self, key: str, tokens: float = 1.0) -> Decision:
        """`TokenBucket.try_acquire` on the bucket of `key` (same rules, same errors)."""
        raise NotImplementedError("KeyedLimiter.try_acquire")

    def __len__(self) -> int:
        """Buckets held in memory now: at most those that are not full."""
        raise NotImplementedError("KeyedLimiter.__len__")
