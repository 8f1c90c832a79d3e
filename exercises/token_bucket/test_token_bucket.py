"""Visible tests for token_bucket: the statement's worked examples and two properties.

Run them with `uv run pytest exercises/token_bucket`; `uv run grader.py token_bucket` runs these
and the hidden checks and prints your score.
"""

from __future__ import annotations

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from token_bucket import Decision, KeyedLimiter, TokenBucket


class FakeClock:
    """A clock the test moves by hand."""

    def __init__(self, now: float = 0.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_a_new_bucket_grants_its_whole_capacity_at_once() -> None:
    """A new bucket is full: it grants `capacity` tokens at once."""
    bucket = TokenBucket(capacity=10, rate=1, clock=FakeClock())
    decision = bucket.try_acquire(10)
    assert decision == Decision(True, 0.0), f"try_acquire(10) on a new bucket returned {decision}"


def test_worked_example_burst_then_refill() -> None:
    """Worked example: a burst of 5, a refusal with retry_after 0.5, a grant after waiting."""
    clock = FakeClock()
    bucket = TokenBucket(capacity=5, rate=2, clock=clock)
    for i in range(5):
        assert bucket.try_acquire().allowed, f"request {i + 1} of the burst was refused"
    refused = bucket.try_acquire()
    assert refused == Decision(False, 0.5), f"the 6th request returned {refused}"
    clock.now = 0.5
    assert bucket.try_acquire().allowed, "refused after waiting exactly retry_after"


def test_a_refused_request_consumes_nothing() -> None:
    """A refused request deducts nothing."""
    bucket = TokenBucket(capacity=4, rate=1, clock=FakeClock())
    bucket.try_acquire(3)
    assert not bucket.try_acquire(2).allowed
    assert bucket.available() == 1, f"available() is {bucket.available()} after a refusal"


def test_refill_never_exceeds_capacity() -> None:
    """Refill stops at capacity however long the bucket sits idle."""
    clock = FakeClock()
    bucket = TokenBucket(capacity=3, rate=100, clock=clock)
    bucket.try_acquire(3)
    clock.now = 1e6
    assert bucket.available() == 3, f"available() is {bucket.available()}, capacity is 3"


@pytest.mark.category("bad_input")
def test_a_request_larger_than_capacity_is_a_value_error() -> None:
    """tokens > capacity raises ValueError (it could never succeed)."""
    bucket = TokenBucket(capacity=2, rate=1, clock=FakeClock())
    with pytest.raises(ValueError, match="3"):
        bucket.try_acquire(3)


def test_keyed_limiter_keeps_keys_independent() -> None:
    """KeyedLimiter: one key's burst does not touch another key's bucket."""
    limiter = KeyedLimiter(capacity=2, rate=1, clock=FakeClock())
    assert limiter.try_acquire("a", 2).allowed
    assert not limiter.try_acquire("a").allowed
    assert limiter.try_acquire("b", 2).allowed, "key 'b' was refused after key 'a' spent"


_amounts = st.sampled_from([0.25, 0.5, 1.0, 1.5, 2.0, 4.0])
_steps = st.lists(st.tuples(st.sampled_from([0.0, 0.125, 0.25, 1.0, 3.0]), _amounts),
                  max_size=40)


@given(steps=_steps)
@example(steps=[(0.0, 4.0), (0.0, 0.25), (0.25, 1.0)])
def test_grants_never_exceed_capacity_plus_refill(steps: list[tuple[float, float]]) -> None:
    """Over any run from a full bucket, tokens granted <= capacity + rate * elapsed."""
    clock = FakeClock()
    bucket = TokenBucket(capacity=4, rate=2, clock=clock)
    granted = 0.0
    for dt, amount in steps:
        clock.now += dt
        if bucket.try_acquire(amount).allowed:
            granted += amount
        assert granted <= 4 + 2 * clock.now, (
            f"granted {granted} tokens by t={clock.now}; at most {4 + 2 * clock.now} possible")


@given(wait=st.sampled_from([0.0, 0.1, 0.3, 1.0, 2.5]), amount=_amounts)
@example(wait=0.1, amount=0.25)
def test_waiting_retry_after_is_enough(wait: float, amount: float) -> None:
    """After a refusal, waiting exactly retry_after makes the same request succeed."""
    clock = FakeClock(100.0)
    bucket = TokenBucket(capacity=4, rate=0.75, clock=clock)
    bucket.try_acquire(4)
    clock.now += wait
    decision = bucket.try_acquire(amount)
    if decision.allowed:
        return
    clock.now += decision.retry_after
    again = bucket.try_acquire(amount)
    assert again.allowed, (
        f"refused {amount} tokens again after waiting retry_after={decision.retry_after}")
