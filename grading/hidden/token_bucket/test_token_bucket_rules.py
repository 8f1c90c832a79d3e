"""Hidden checks for token_bucket, part 1: full start, capped refill, grants, refusals, and the
clock (rules 1-6)."""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from token_bucket import Decision, KeyedLimiter, TokenBucket
from token_bucket_helpers import Clock, load_with_clocks, make_bucket

# --- rules 1-3: full at start, lazy capped refill, grants -------------------------------------


@pytest.mark.points(2)
def test_a_new_bucket_is_full() -> None:
    """A new bucket grants its whole capacity at once (it does not start empty)."""
    bucket, _ = make_bucket(capacity=7, rate=0.5, now=1000.0)
    assert bucket.available() == 7, f"available() on a new bucket is {bucket.available()}, not 7"
    assert bucket.try_acquire(7) == Decision(True, 0.0)


# A handful of calls each: 1 s is hundreds of times what they need, and an answer stuck in one
# (a refill capped below the request, searched for a wait that never comes) costs 1 s, not 10.
@pytest.mark.points(2)
@pytest.mark.timeout(1)
def test_refill_is_rate_per_second_and_capped_at_capacity() -> None:
    """Refill adds rate * elapsed and stops at capacity (capacity and rate are not conflated)."""
    bucket, clock = make_bucket(capacity=10, rate=2)
    bucket.try_acquire(10)
    clock.now = 1.0
    assert bucket.available() == 2, f"1 s after draining, available() is {bucket.available()}; " \
                                    "rate 2/s should refill 2 (not capacity 10)"
    clock.now = 100.0
    assert bucket.available() == 10, f"after 100 s, available() is {bucket.available()}; " \
                                     "the cap is capacity 10 (not rate 2)"


@pytest.mark.points(4)
@pytest.mark.timeout(1)
def test_try_acquire_caps_the_refill_at_capacity() -> None:
    """try_acquire alone: a long idle refills to capacity and no further, a short one refills
    rate * elapsed (capacity and rate are not conflated)."""
    bucket, clock = make_bucket(capacity=10, rate=2)
    assert bucket.try_acquire(10).allowed
    clock.now = 1.0
    got = bucket.try_acquire(3)
    assert got == Decision(False, 0.5), (
        f"1 s after draining (2 tokens at rate 2/s), try_acquire(3) returned {got}, "
        "expected Decision(False, 0.5)")
    assert bucket.try_acquire(2).allowed, "1 s after draining, try_acquire(2) was refused"
    for idle in (100.0, 1e6):
        clock.now += idle
        assert bucket.try_acquire(10).allowed, f"after {idle:g} s idle, 10 tokens were refused"
        got = bucket.try_acquire(0.5)
        assert got == Decision(False, 0.25), (
            f"after {idle:g} s idle and a grant of the whole capacity 10, try_acquire(0.5) "
            f"returned {got}: the refill must stop at capacity 10 (not {2 * idle:g}, not 2)")


def test_an_allowed_request_deducts_its_tokens() -> None:
    """An allowed request deducts exactly its tokens and says retry_after 0.0."""
    bucket, _ = make_bucket(capacity=8, rate=1)
    assert bucket.try_acquire(2.5) == Decision(True, 0.0)
    assert bucket.available() == 5.5, f"after taking 2.5 of 8, available() is {bucket.available()}"


def test_a_request_of_exactly_capacity_is_valid() -> None:
    """A request of exactly `capacity` tokens is valid and granted from a full bucket."""
    bucket, _ = make_bucket(capacity=3.25, rate=1)
    assert bucket.try_acquire(3.25).allowed


def test_a_request_is_one_token_by_default() -> None:
    """try_acquire() without a tokens argument asks for 1 token (TokenBucket and KeyedLimiter)."""
    bucket, _ = make_bucket(capacity=2.5, rate=1)
    assert bucket.try_acquire().allowed
    assert bucket.available() == 1.5, f"after try_acquire(), available() is {bucket.available()}"
    limiter = KeyedLimiter(2.5, 1, clock=Clock())
    got = [limiter.try_acquire("k") for _ in range(3)]
    assert got == [Decision(True, 0.0), Decision(True, 0.0), Decision(False, 0.5)], (
        f"three KeyedLimiter.try_acquire('k') calls on capacity 2.5 returned {got}")


def test_refill_needs_no_thread_or_timer() -> None:
    """Refill is lazy: it follows the injected clock, whatever the real time does."""
    bucket, clock = make_bucket(capacity=4, rate=4)
    bucket.try_acquire(4)
    assert bucket.available() == 0, "tokens appeared while the injected clock stood still"
    clock.now = 0.5
    assert bucket.available() == 2


@pytest.mark.points(2)
def test_available_counts_time_once() -> None:
    """available() brings the bucket up to date: calling it again and again mints nothing."""
    bucket, clock = make_bucket(capacity=10, rate=1)
    bucket.try_acquire(10)
    for t in (1.0, 2.0, 3.0, 3.0):
        clock.now = t
        assert bucket.available() == t, (
            f"available() at t={t:g}, 1 token/s after draining, returned {bucket.available()} "
            f"(expected {t:g}: each second of refill is counted once)")
    got = bucket.try_acquire(4)
    assert got == Decision(False, 1.0), f"with 3 tokens, try_acquire(4) returned {got}"


# --- rule 4: refusals ------------------------------------------------------------------------


@pytest.mark.points(3)
def test_refused_request_consumes_nothing() -> None:
    """A refused request deducts nothing: a smaller request right after it still succeeds."""
    bucket, _ = make_bucket(capacity=5, rate=1)
    bucket.try_acquire(2)
    assert not bucket.try_acquire(4).allowed
    assert bucket.available() == 3, f"available() is {bucket.available()} after a refusal, not 3"
    assert bucket.try_acquire(3).allowed, "3 of the 3 remaining tokens were refused"


@pytest.mark.points(3)
def test_retry_after_counts_what_is_available() -> None:
    """retry_after is (tokens - available) / rate: not tokens / rate, not whole seconds."""
    bucket, _ = make_bucket(capacity=4, rate=2)
    bucket.try_acquire(3)
    decision = bucket.try_acquire(2)
    assert decision == Decision(False, 0.5), f"with 1 of 2 tokens at rate 2/s got {decision}"


@pytest.mark.points(3)
def test_refusals_do_not_mint_tokens() -> None:
    """Time is counted once: repeated refusals neither add nor lose refill."""
    bucket, clock = make_bucket(capacity=4, rate=1)
    bucket.try_acquire(4)
    for t in (1.0, 2.0):
        clock.now = t
        assert not bucket.try_acquire(4).allowed
    clock.now = 3.0
    decision = bucket.try_acquire(4)
    assert decision == Decision(False, 1.0), f"at t=3 (3 tokens refilled) got {decision}"
    clock.now = 4.0
    assert bucket.try_acquire(4).allowed, "at t=4 the bucket is full again and was refused"


# --- rule 5: never more than capacity + rate * T ----------------------------------------------


@given(steps=st.lists(st.tuples(st.sampled_from([0.0, 0.0625, 0.5, 2.0]),
                                st.sampled_from([0.0, 0.5, 1.0, 2.5, 3.0])), max_size=60))
# Full at t=0 (available()), idle 2 s while full, drain, then ask again at once: time spent
# full is not banked.
@example(steps=[(0.0, 0.0), (2.0, 3.0), (0.0, 3.0)])
def test_no_interval_grants_more_than_capacity_plus_its_refill(
        steps: list[tuple[float, float]]) -> None:
    """Over any interval of clock time T, tokens granted never exceed capacity + rate * T
    (time a bucket spends full is not banked)."""
    bucket, clock = make_bucket(capacity=3, rate=1.5)
    grants: list[tuple[float, float]] = []  # (clock reading, tokens granted)
    for dt, amount in steps:
        clock.now += dt
        if amount == 0:  # available() instead: it brings the bucket up to date too
            bucket.available()
        elif bucket.try_acquire(amount).allowed:
            grants.append((clock.now, amount))
        # Every interval that ends now: the bucket was at most full when it began.
        granted = 0.0
        for then, taken in reversed(grants):
            granted += taken
            assert granted <= 3 + 1.5 * (clock.now - then), (
                f"TokenBucket(3, 1.5) granted {granted} tokens from t={then} to t={clock.now}; "
                f"at most {3 + 1.5 * (clock.now - then)} (capacity + rate * T) can be there")


# --- rule 6: the clock ------------------------------------------------------------------------


@pytest.mark.points(2)
@pytest.mark.parametrize("cls", ["TokenBucket", "KeyedLimiter"])
def test_default_clock_is_monotonic_not_wall_time(monkeypatch: pytest.MonkeyPatch,
                                                  cls: str) -> None:
    """The default clock is time.monotonic: a wall-clock (NTP) step neither mints nor destroys."""
    monotonic, wall = Clock(1000.0), Clock(1.7e9)
    module = load_with_clocks(monkeypatch, monotonic, wall)
    limiter = getattr(module, cls)(2, 1)
    acquire = limiter.try_acquire if cls == "TokenBucket" else (
        lambda n: limiter.try_acquire("k", n))
    assert acquire(2).allowed
    wall.now += 3600.0  # the wall clock steps forward an hour; monotonic time stands still
    assert not acquire(1).allowed, "a wall-clock step forward refilled the bucket"
    monotonic.now += 2.0
    wall.now -= 7200.0  # and back two hours while 2 s of monotonic time pass
    assert acquire(2).allowed, "2 s of monotonic time did not refill 2 tokens at rate 1/s"


@pytest.mark.points(2)
@pytest.mark.category("edge_cases")
def test_a_clock_stepping_back_neither_adds_nor_removes_tokens() -> None:
    """A clock jittering 100 -> 40 -> 100 mints nothing; retry_after counts from the greatest
    reading seen."""
    bucket, clock = make_bucket(capacity=10, rate=1, now=100.0)
    bucket.try_acquire(10)
    clock.now = 40.0
    assert bucket.available() == 0, f"available() is {bucket.available()} after the clock fell"
    decision = bucket.try_acquire(3)
    assert decision == Decision(False, 3.0), f"at reading 40 (greatest 100) got {decision}"
    clock.now = 100.0
    assert bucket.available() == 0, (f"the clock climbing back to 100 minted "
                                     f"{bucket.available()} tokens")
    clock.now = 103.0
    assert bucket.try_acquire(3).allowed, "refused 3 s after the greatest reading"


@pytest.mark.parametrize("start", [-100.0, -1e6 - 0.125, -0.25], ids=["-100", "-1e6", "-0.25"])
def test_a_clock_below_zero_counts_time_like_any_other(start: float) -> None:
    """A clock that reads below zero refills as any other: only differences between readings
    count (TokenBucket and KeyedLimiter)."""
    clock = Clock(start)
    bucket = TokenBucket(2, 4, clock=clock)
    limiter = KeyedLimiter(2, 4, clock=clock)
    calls = (("TokenBucket.try_acquire", bucket.try_acquire),
             ("KeyedLimiter.try_acquire('k', ...)", lambda n: limiter.try_acquire("k", n)))
    for what, acquire in calls:
        clock.now = start
        assert acquire(2).allowed, f"{what}(2) on a new bucket at t={start!r} was refused"
        clock.now = start + 0.25
        got = acquire(2)
        assert got == Decision(False, 0.25), (
            f"{what}(2) at t={clock.now!r}, 0.25 s after draining (1 of 2 tokens at rate 4/s), "
            f"returned {got}; expected Decision(False, 0.25)")
        clock.now = start + 0.5
        assert acquire(2).allowed, (
            f"{what}(2) at t={clock.now!r}, 0.5 s after draining at t={start!r} (2 tokens at "
            f"rate 4/s), was refused: time below zero counts too")
