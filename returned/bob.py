"""Lazy-refill token bucket, and a per-key limiter with bounded memory (reference solution).

One bucket is two numbers, the tokens held and the clock reading they were counted at; every
call first brings them up to date (`elapsed * rate`, capped at capacity), then decides. There is
no background refill, and one lock makes refill-and-decide atomic.
"""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from numbers import Real

__all__ = ["Decision", "KeyedLimiter", "TokenBucket"]


@dataclass(frozen=True)
class Decision:
    """The answer to one request: allowed, or when to come back."""

    allowed: bool
    retry_after: float  # seconds; 0.0 when allowed


_ALLOWED = Decision(True, 0.0)


def _positive(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, Real):
        raise TypeError(f"{name} must be a number, got {value!r}")
    number = float(value)
    if not (math.isfinite(number) and number > 0):
        raise ValueError(f"{name} must be a finite number > 0, got {value!r}")
    return number


class _Bucket:
    """Tokens held as of clock reading `last`. Not thread-safe: callers hold a lock."""

    __slots__ = ("last", "tokens")

    def __init__(self, capacity: float) -> None:
        # Invariants: 0 <= tokens <= capacity; `last` is the greatest clock reading seen
        # (-inf before the first), so time is only ever counted forward.
        self.tokens = capacity
        self.last = -math.inf

    def level_at(self, now: float, capacity: float, rate: float) -> float:
        if now <= self.last:
            return self.tokens
        return min(capacity, self.tokens + (now - self.last) * rate)

    def refill(self, now: float, capacity: float, rate: float) -> None:
        self.tokens = self.level_at(now, capacity, rate)
        self.last = max(self.last, now)

    def acquire(self, now: float, tokens: float, capacity: float, rate: float) -> Decision:
        if now > self.last:  # `refill`, inlined: this is the hot path
            self.tokens = min(capacity, self.tokens + (now - self.last) * rate)
            self.last = now
        if tokens <= self.tokens:
            self.tokens -= tokens
            return _ALLOWED
        decision = Decision(False, self._wait(tokens, capacity, rate))
        self.tokens = 0.0
        return decision

    def _wait(self, tokens: float, capacity: float, rate: float) -> float:
        """A wait whose refill at `last + wait` covers `tokens`: the exact one, or a few ulps more.

        The exact wait is deficit / rate, but the refill at `last + wait` is computed in floating
        point and may fall a hair short; then search upward (doubling, then bisecting) for the
        least float wait that suffices. A client that waits exactly `retry_after`
        is never refused for want of 1e-16 tokens.
        """

        def enough(wait: float) -> bool:
            return self.level_at(self.last + wait, capacity, rate) >= tokens

        wait = (tokens - self.tokens) / rate
        if enough(wait):
            return wait
        low, step = wait, max(math.ulp(wait), math.ulp(self.last))
        high = low + step
        while not enough(high):
            low, step = high, step * 2
            high = low + step
        while low < (mid := low + (high - low) / 2) < high:
            low, high = (low, mid) if enough(mid) else (mid, high)
        return high


class TokenBucket:
    """A bucket of `capacity` tokens refilled at `rate` tokens per second of `clock` time.

    >>> t = [0.0]
    >>> bucket = TokenBucket(capacity=2, rate=1, clock=lambda: t[0])
    >>> bucket.try_acquire(2), bucket.try_acquire(1)
    (Decision(allowed=True, retry_after=0.0), Decision(allowed=False, retry_after=1.0))
    """

    def __init__(self, capacity: float, rate: float, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._capacity = _positive("capacity", capacity)
        self._rate = _positive("rate", rate)
        self._clock = clock
        self._bucket = _Bucket(self._capacity)
        self._lock = threading.Lock()

    def try_acquire(self, tokens: float = 1.0) -> Decision:
        """Take `tokens` if available now; otherwise take nothing and say how long to wait.

        Raises:
            TypeError: `tokens` is not a number (or is a bool).
            ValueError: `tokens` is not finite, not > 0, or more than `capacity`.
        """
        amount = _request(tokens, self._capacity)
        with self._lock:
            return self._bucket.acquire(self._clock(), amount, self._capacity, self._rate)

    def available(self) -> float:
        """Tokens available now, after the lazy refill."""
        with self._lock:
            self._bucket.refill(self._clock(), self._capacity, self._rate)
            return self._bucket.tokens


def _request(tokens: object, capacity: float) -> float:
    if type(tokens) is float and 0.0 < tokens <= capacity:
        return tokens  # the common case, without the slow abstract-class check below
    if isinstance(tokens, bool) or not isinstance(tokens, Real):
        raise TypeError(f"tokens must be a number, got {tokens!r}")
    amount = float(tokens)
    if not (math.isfinite(amount) and 0 < amount <= capacity):
        raise ValueError(f"tokens must be finite, > 0 and <= capacity {capacity!r}, "
                         f"got {tokens!r}")
    return amount


class KeyedLimiter:
    """One independent `TokenBucket` per key, holding in memory only buckets that are not full.

    A bucket refilled to capacity is indistinguishable from a new one, so it is dropped. Buckets
    are kept in order of last use: the least recently used refilled longest, so dropping pops
    from the front until it meets one that is not full. Each bucket is dropped at most once per
    use, so the cost is amortized O(1) per call.
    """

    def __init__(self, capacity: float, rate: float, *,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._capacity = _positive("capacity", capacity)
        self._rate = _positive("rate", rate)
        self._clock = clock
        self._buckets: OrderedDict[str, _Bucket] = OrderedDict()
        self._lock = threading.Lock()

    def try_acquire(self, key: str, tokens: float = 1.0) -> Decision:
        """`TokenBucket.try_acquire` on the bucket of `key` (same errors)."""
        amount = _request(tokens, self._capacity)
        with self._lock:
            now = self._clock()
            bucket = self._buckets.get(key)
            if bucket is None:
                bucket = self._buckets[key] = _Bucket(self._capacity)
            else:
                self._buckets.move_to_end(key)
            decision = bucket.acquire(now, amount, self._capacity, self._rate)
            self._drop_full(now)
            return decision

    def _drop_full(self, now: float) -> None:
        while self._buckets:
            key, oldest = next(iter(self._buckets.items()))
            if oldest.level_at(now, self._capacity, self._rate) < self._capacity:
                return
            del self._buckets[key]

    def __len__(self) -> int:
        """Buckets held in memory now."""
        with self._lock:
            return len(self._buckets)
