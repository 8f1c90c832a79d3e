"""Hidden checks for token_bucket: threads on one bucket and on one key never over-grant
(rule 5)."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

import pytest
from token_bucket import Decision, KeyedLimiter, TokenBucket
from token_bucket_helpers import ROUNDS, TickingClock, _Reading, hammer

pytestmark = [pytest.mark.category("concurrency"), pytest.mark.timeout(60)]


@pytest.mark.points(3)
def test_threads_never_over_grant() -> None:
    """Many threads at once: grants never exceed capacity (refill and deduct are atomic)."""
    for _ in range(ROUNDS):
        bucket = TokenBucket(1000, 1e-9, clock=TickingClock(5.0))
        granted = hammer(bucket.try_acquire)
        assert granted == 1000, (
            f"4 threads x 500 requests were granted {granted} tokens from a bucket of 1000")


@pytest.mark.points(2)
def test_available_under_threads_never_undoes_a_grant() -> None:
    """available() among threads granting: it brings the bucket up to date under the same lock,
    so a grant made meanwhile is never overwritten (and granted again)."""
    for _ in range(ROUNDS):
        bucket = TokenBucket(1000, 1e-9, clock=TickingClock(5.0))

        def look_then_acquire(bucket: TokenBucket = bucket) -> Decision:
            bucket.available()
            return bucket.try_acquire()

        granted = hammer(look_then_acquire)
        assert granted == 1000, (
            f"4 threads x 500 times available() then try_acquire() were granted {granted} tokens "
            f"from a bucket of 1000")


@pytest.mark.points(2)
def test_keyed_limiter_threads_never_over_grant() -> None:
    """KeyedLimiter under threads: one key's grants never exceed its capacity."""
    for _ in range(ROUNDS):
        limiter = KeyedLimiter(1000, 1e-9, clock=TickingClock(5.0))
        granted = hammer(functools.partial(limiter.try_acquire, "tenant"))
        assert granted == 1000, (
            f"4 threads x 500 requests were granted {granted} of a key's 1000 tokens")


class _MeetingClock:
    """A clock whose first reader waits (up to 10 ms) for a second thread to read it too: a
    check-then-create that reads the clock between its check and its store lets every racing
    thread into that window, while under a lock the first reader waits alone, once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._inside = 0
        self._met = threading.Event()
        self._first = True

    def __call__(self) -> float:
        with self._lock:
            self._inside += 1
            if self._inside >= 2:
                self._met.set()
            first, self._first = self._first, False
        if first:
            self._met.wait(0.01)
        with self._lock:
            self._inside -= 1
        return 5.0


def _race_first_calls(acquire: Callable[[], Decision]) -> int:
    """Eight threads released at once each make one call; how many were granted."""
    start = threading.Barrier(8)
    granted: list[bool] = []

    def worker() -> None:
        start.wait()
        granted.append(acquire().allowed)

    pool = [threading.Thread(target=worker) for _ in range(8)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return sum(granted)


@pytest.mark.points(2)
def test_threads_racing_on_a_new_key_share_one_bucket() -> None:
    """Threads whose first calls on a new key race share one bucket: its capacity is granted
    once."""
    for round_ in range(10):
        limiter = KeyedLimiter(1, 1e-9, clock=_MeetingClock())
        granted = _race_first_calls(functools.partial(limiter.try_acquire, "new", 1))
        assert granted == 1, (
            f"round {round_}: 8 threads calling try_acquire('new', 1) at once on a new key of "
            f"capacity 1 were granted {granted} times")


@pytest.mark.points(2)
def test_threads_racing_on_a_new_buckets_first_call_share_its_capacity() -> None:
    """Threads whose first calls on a new TokenBucket race: its capacity is granted once."""
    for round_ in range(10):
        bucket = TokenBucket(1, 1e-9, clock=_MeetingClock())
        granted = _race_first_calls(functools.partial(bucket.try_acquire, 1))
        assert granted == 1, (
            f"round {round_}: 8 threads calling try_acquire(1) at once on a new TokenBucket of "
            f"capacity 1 (the clock standing still) were granted {granted} times")


class _MeanwhileClock:
    """A fixed clock whose first reading runs `meanwhile` (once, in the reading thread)."""

    def __init__(self) -> None:
        self.meanwhile: Callable[[], None] = lambda: None

    def __call__(self) -> float:
        meanwhile, self.meanwhile = self.meanwhile, lambda: None
        meanwhile()
        return 5.0


@pytest.mark.points(2)
def test_a_call_on_another_key_never_drops_a_bucket_in_use() -> None:
    """Threads on different keys: a call on one key never drops the bucket another thread is
    deciding on (the key's capacity would be granted twice)."""
    for round_ in range(2):
        clock = _MeanwhileClock()
        limiter = KeyedLimiter(1, 1, clock=clock)
        answers: list[tuple[str, bool]] = []
        helpers: list[threading.Thread] = []

        def others(limiter: KeyedLimiter = limiter, answers: list[tuple[str, bool]] = answers,
                   helpers: list[threading.Thread] = helpers) -> None:
            def run() -> None:
                for key in ("b", "a"):
                    answers.append((key, limiter.try_acquire(key, 1).allowed))

            helper = threading.Thread(target=run)
            helpers.append(helper)
            helper.start()
            # A limiter that holds one lock keeps the helper waiting until this call is over:
            # wait a while for it, then let this call go on.
            helper.join(0.25)

        clock.meanwhile = others
        answers.append(("a", limiter.try_acquire("a", 1).allowed))
        for helper in helpers:
            helper.join()
        granted = sum(ok for key, ok in answers if key == "a")
        assert granted == 1, (
            f"round {round_}: the clock stood still; while a first try_acquire('a', 1) read it, "
            f"another thread called try_acquire('b', 1) and try_acquire('a', 1); key 'a' (capacity "
            f"1) was granted {granted} times: a call on 'b' dropped the bucket of 'a' in use")


class _GatheringClock:
    """A clock whose readers each wait (up to 10 ms) until `count` readings have been taken in
    all, then read `now` as a reading whose subtraction yields the GIL. Under one lock the
    readers come one at a time and each waits alone; a refill that reads the clock and the
    bucket's timestamp before taking the lock lets every thread read the same old timestamp."""

    def __init__(self, count: int) -> None:
        self.now = 0.0
        self.gather = False
        self._count = count
        self._lock = threading.Lock()
        self._reads = 0
        self._all = threading.Event()

    def __call__(self) -> float:
        if not self.gather:
            return self.now
        with self._lock:
            self._reads += 1
            if self._reads >= self._count:
                self._all.set()
        self._all.wait(0.01)
        return _Reading(self.now)


@pytest.mark.points(2)
@pytest.mark.parametrize("cls", ["TokenBucket", "KeyedLimiter"])
def test_threads_reading_the_clock_together_count_the_refill_once(cls: str) -> None:
    """Threads calling at once on a drained bucket share the refill since it was drained: 1 s at
    1 token/s grants 1 token, however many threads read the clock together."""
    for round_ in range(10):
        clock = _GatheringClock(8)
        if cls == "TokenBucket":
            acquire: Callable[[], Decision] = functools.partial(
                TokenBucket(1, 1, clock=clock).try_acquire, 1)
        else:
            acquire = functools.partial(KeyedLimiter(1, 1, clock=clock).try_acquire, "k", 1)
        assert acquire().allowed, f"{cls}(1, 1): a new bucket's 1 token was refused"
        clock.now, clock.gather = 1.0, True
        granted = _race_first_calls(acquire)
        assert granted == 1, (
            f"round {round_}: {cls}(1, 1) drained at t=0; 8 threads calling try_acquire(1) at "
            f"once at t=1 were granted {granted} tokens, where 1 s refilled 1: each thread "
            f"added the same refill (the clock and the bucket's timestamp read outside the lock?)")
