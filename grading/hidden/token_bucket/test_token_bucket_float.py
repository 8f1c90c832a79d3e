"""Hidden checks for token_bucket: the float boundary of rule 4, and the same answers at every
scale of tokens and of time.

Every transform here is exact: amounts, rates and clock readings are scaled by powers of two
(2**-40 to 2**40), which round exactly as the unscaled values do.
"""

from __future__ import annotations

import functools
import math
from fractions import Fraction

import kata_measure
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from token_bucket import Decision, KeyedLimiter
from token_bucket_helpers import (
    AWKWARD,
    DTS,
    SHARES,
    STARTS,
    Clock,
    check_retry_after,
    first_difference,
    make_bucket,
    run_bucket,
    run_keyed,
    ulp_bound,
)

_AWKWARD = st.sampled_from([0.1, 0.3, 1 / 3, 0.7, 1.0, 7.77, 1e-3, 12.5, 1e5, 3e7])
_START = st.sampled_from([0.0, 0.1, 12345.678, 1e6 + 0.1, 86400.0 * 365, 2.0**40 + 0.5])


# Rule 4's property, on a TokenBucket and on a KeyedLimiter's key: drain `spend` of capacity,
# wait `wait` of capacity / rate, ask `ask` of capacity.
_RULE_4 = {"capacity": _AWKWARD, "rate": _AWKWARD, "start": _START,
           "spend": st.floats(0.01, 1.0), "wait": st.floats(0.0, 1.0), "ask": st.floats(0.01, 1.0)}


@pytest.mark.points(3)
@pytest.mark.category("edge_cases")
@settings(max_examples=200)
@given(**_RULE_4)
@example(capacity=0.1, rate=0.1, start=0.0, spend=1.0, wait=0.3, ask=1.0)
# The first estimate and the first step both fall short: the search doubles once more.
@example(capacity=1.0, rate=0.3, start=0.1, spend=1.0, wait=0.1, ask=1.0)
@example(capacity=0.7, rate=1e5, start=0.0, spend=1.0, wait=0.3, ask=0.7)
@example(capacity=1 / 3, rate=3e7, start=0.0, spend=1.0, wait=0.3, ask=0.7)
# The wait (0.25) is longer than the clock (0.1): last + wait rounds down, so the least
# sufficient reading minus last is not a wait that reaches it.
@example(capacity=1.0, rate=2.0, start=0.1, spend=1.0, wait=0.0, ask=0.5)
def test_waiting_exactly_retry_after_is_sufficient_and_not_wasteful(
        capacity: float, rate: float, start: float, spend: float, wait: float,
        ask: float) -> None:
    """Float boundary: after waiting exactly retry_after the request is allowed; the wait is
    at most 8 ulps longer than the true one."""
    bucket, clock = make_bucket(capacity, rate, start)
    check_retry_after(bucket.try_acquire, clock, f"TokenBucket({capacity!r}, {rate!r})",
                      capacity, rate, spend, wait, ask)


@pytest.mark.points(2)
@pytest.mark.category("edge_cases")
def test_a_request_slightly_short_is_refused_at_any_scale() -> None:
    """A grant forgives no more than rounding: a request 0.05% above what is there is refused."""
    for scale in (1e-6, 1.0, 1e6, 1e12):
        bucket, clock = make_bucket(capacity=scale, rate=scale)
        bucket.try_acquire(scale)
        clock.now = 0.5
        asked = 0.5 * scale * 1.0005
        decision = bucket.try_acquire(asked)
        assert not decision.allowed, f"granted {asked!r} with only {0.5 * scale!r} available"



@pytest.mark.category("edge_cases")
@pytest.mark.parametrize(("capacity", "rate", "now"), [
    (1.0, 1.0, 0.5), (0.3, 0.1, 1.7), (7.77, 1 / 3, 12.0), (2.0**-30, 2.0**-31, 1.5),
    (0.7 * 2.0**30, 12.5, 2.0**24)], ids=["1/1", "0.3/0.1", "7.77/third", "tiny", "huge"])
def test_a_grant_forgives_only_rounding_error(capacity: float, rate: float, now: float) -> None:
    """A grant forgives only rounding: on a clock near 0, a request one part in 10**12 above
    what is available is refused."""
    bucket, clock = make_bucket(capacity, rate)
    assert bucket.try_acquire(capacity).allowed
    clock.now = now
    there = Fraction(now) * Fraction(rate)  # exact: drained at 0, refilling ever since
    asked = float(there * (1 + Fraction(1, 10**12)))
    slack = Fraction(rate) * Fraction(ulp_bound(now, capacity, rate))
    assert Fraction(asked) - there > 10 * slack and asked < capacity  # far beyond rounding
    decision = bucket.try_acquire(asked)
    assert not decision.allowed, (
        f"TokenBucket({capacity!r}, {rate!r}) drained at t=0 holds {float(there)!r} tokens at "
        f"t={now!r}, and try_acquire({asked!r}) was granted: {float(Fraction(asked) - there)!r} "
        f"tokens more than there are, where rounding allows at most {float(slack)!r}")


# --- metamorphic: the same calls at another scale ---------------------------------------------

_STEPS = st.lists(st.tuples(st.sampled_from(DTS), st.sampled_from(SHARES)), min_size=1,
                  max_size=25)
# Drain, refuse, wait exactly retry_after, ask again; then idle far past full and drain again.
_BOUNDARY = [(0.0, 1.0), (0.1, 0.7), (-1.0, 0.7), (0.3, 0.0), (0.0, 1 / 3), (-1.0, 1 / 3),
             (3.0, 1.0), (0.01, 0.25), (-1.0, 0.25), (0.0, 0.0)]


@pytest.mark.points(2)
@pytest.mark.category("edge_cases")
@settings(max_examples=60)
@given(capacity=st.sampled_from(AWKWARD), rate=st.sampled_from(AWKWARD),
       start=st.sampled_from(STARTS), steps=_STEPS, k=st.integers(-40, 40))
@example(capacity=0.3, rate=0.1, start=1e6 + 0.1, steps=_BOUNDARY, k=-40)
@example(capacity=0.3, rate=0.1, start=1e6 + 0.1, steps=_BOUNDARY, k=40)
@example(capacity=7.77, rate=1 / 3, start=0.1, steps=_BOUNDARY, k=-20)
@example(capacity=1e-3, rate=12.5, start=2.0**33 + 0.5, steps=_BOUNDARY, k=-40)
def test_token_bucket_is_the_same_at_every_scale(capacity: float, rate: float, start: float,
                                                 steps: list[tuple[float, float]],
                                                 k: int) -> None:
    """Scaling capacity, rate and every request by 2**k (k from -40 to 40) changes no decision
    and no retry_after; available() scales with them."""
    want = run_bucket(capacity, rate, start, steps)
    got = run_bucket(capacity, rate, start, steps, tokens=k)
    assert got == want, (
        f"TokenBucket({capacity!r}, {rate!r}) from t={start!r}, tokens scaled by 2**{k}: "
        f"{first_difference(want, got)} (answers shown scaled back)")


@pytest.mark.points(2)
@pytest.mark.category("edge_cases")
@settings(max_examples=60)
@given(capacity=st.sampled_from(AWKWARD), rate=st.sampled_from(AWKWARD),
       start=st.sampled_from(STARTS), steps=_STEPS, j=st.integers(-40, 40))
@example(capacity=0.3, rate=0.1, start=1e6 + 0.1, steps=_BOUNDARY, j=-40)
@example(capacity=0.3, rate=0.1, start=1e6 + 0.1, steps=_BOUNDARY, j=40)
@example(capacity=12.5, rate=0.7, start=12345.678, steps=_BOUNDARY, j=-33)
@example(capacity=1 / 3, rate=1e-3, start=0.0, steps=_BOUNDARY, j=30)
def test_a_faster_clock_scales_only_retry_after(capacity: float, rate: float, start: float,
                                                steps: list[tuple[float, float]],
                                                j: int) -> None:
    """Scaling every clock reading by 2**j and the rate by 2**-j (j from -40 to 40) changes no
    decision; retry_after scales by 2**j."""
    want = run_bucket(capacity, rate, start, steps)
    got = run_bucket(capacity, rate, start, steps, time_=j)
    assert got == want, (
        f"TokenBucket({capacity!r}, {rate!r}) from t={start!r}, time scaled by 2**{j}: "
        f"{first_difference(want, got)} (retry_after shown divided by 2**{j})")


_KEYED_STEPS = st.lists(st.tuples(st.sampled_from("abc"), st.sampled_from(DTS),
                                  st.sampled_from(SHARES[1:])), min_size=1, max_size=30)
# Drain a key, let other keys come and go, come back before it has refilled.
_DEBT = [("a", 0.0, 1.0), ("b", 0.1, 0.5), ("c", 0.3, 1.0), ("a", 0.01, 0.7),
         ("b", 1.0, 1.0), ("a", 0.0, 0.25), ("a", -1.0, 0.25), ("c", 0.1, 0.1)]


@pytest.mark.points(2)
@pytest.mark.category("edge_cases")
@settings(max_examples=60)
@given(capacity=st.sampled_from(AWKWARD), rate=st.sampled_from(AWKWARD),
       start=st.sampled_from(STARTS), steps=_KEYED_STEPS, k=st.integers(-40, 40))
@example(capacity=4.0, rate=2.0, start=10.0, steps=_DEBT, k=-40)
@example(capacity=4.0, rate=2.0, start=10.0, steps=_DEBT, k=-20)
@example(capacity=0.3, rate=0.1, start=1e6 + 0.1, steps=_DEBT, k=40)
@example(capacity=7.77, rate=1 / 3, start=0.0, steps=_DEBT, k=-30)
def test_keyed_limiter_is_the_same_at_every_scale(capacity: float, rate: float, start: float,
                                                  steps: list[tuple[str, float, float]],
                                                  k: int) -> None:
    """KeyedLimiter: scaling capacity, rate and every request by 2**k (k from -40 to 40) changes
    no decision and no retry_after (a bucket short of full by a fixed slack is not full)."""
    want = run_keyed(capacity, rate, start, steps)
    got = run_keyed(capacity, rate, start, steps, tokens=k)
    assert got == want, (
        f"KeyedLimiter({capacity!r}, {rate!r}) from t={start!r}, tokens scaled by 2**{k}: "
        f"{first_difference(want, got)}")


# --- a clock below zero: the wait ends at reading 0.0 -----------------------------------------

# Drained at a reading below zero; last + (need / rate) rounds to exactly 0.0, where the refill
# falls one ulp short. The reading's float neighbours above 0.0 are subnormals, far closer
# together than last + wait can tell apart.
_ENDS_AT_ZERO = [(-0.3, 3.0, 1.0, 0.9), (-0.3, 0.1, 1.0, 0.030000000000000002),
                 (-12.3, 10.0, 200.0, 123.00000000000001),
                 (-0.06365563730895109, 6.807195732086041, 4.0, 0.43331638261270883)]


@pytest.mark.category("edge_cases")
@pytest.mark.timeout(30)
@pytest.mark.parametrize(("start", "rate", "capacity", "asked"), _ENDS_AT_ZERO,
                         ids=["-0.3/3", "-0.3/0.1", "-12.3/10", "-0.0637/6.81"])
def test_a_wait_that_ends_at_reading_zero_is_answered_at_once(
        start: float, rate: float, capacity: float, asked: float) -> None:
    """A refusal on a clock below zero whose wait ends at reading 0.0 answers at once, with a
    sufficient retry_after."""
    bucket, clock = make_bucket(capacity, rate, start)
    assert bucket.try_acquire(capacity).allowed
    answer: list[Decision] = []
    spent = kata_measure.seconds(lambda: answer.append(bucket.try_acquire(asked)), budget=0.5)
    call = (f"TokenBucket({capacity!r}, {rate!r}) drained at t={start!r}, then "
            f"try_acquire({asked!r}) at the same reading")
    assert answer and not math.isinf(spent), (
        f"{call} was still running after 0.5 s of CPU time; the wait ends at reading 0.0, "
        f"and the answer is about {asked / rate!r} s")
    decision = answer[0]
    assert not decision.allowed, f"{call} was granted with no tokens available"
    true_wait = Fraction(asked) / Fraction(rate)
    bound = ulp_bound(start, capacity, rate)
    assert decision.retry_after <= true_wait + Fraction(bound), (
        f"{call} returned retry_after={decision.retry_after!r}, more than 8 ulps ({bound!r}) "
        f"beyond the true wait {float(true_wait)!r}")
    clock.now = start + decision.retry_after
    assert bucket.try_acquire(asked).allowed, (
        f"{call} returned retry_after={decision.retry_after!r}; at t={clock.now!r} (start + "
        f"retry_after) the same request was refused")


@pytest.mark.points(2)
@pytest.mark.category("edge_cases")
@settings(max_examples=100)
@given(**_RULE_4)
@example(capacity=4.0, rate=0.3, start=12345.678, spend=1.0, wait=0.075, ask=0.125)
@example(capacity=1.0, rate=0.3, start=0.1, spend=1.0, wait=0.1, ask=1.0)
@example(capacity=1.0, rate=2.0, start=0.1, spend=1.0, wait=0.0, ask=0.5)
def test_keyed_limiter_waiting_exactly_retry_after_is_sufficient(
        capacity: float, rate: float, start: float, spend: float, wait: float,
        ask: float) -> None:
    """Float boundary in KeyedLimiter too: after waiting exactly retry_after the key's request
    is allowed; the wait is at most 8 ulps longer than the true one."""
    clock = Clock(start)
    limiter = KeyedLimiter(capacity, rate, clock=clock)
    check_retry_after(functools.partial(limiter.try_acquire, "k"), clock,
                      f"KeyedLimiter({capacity!r}, {rate!r}), key 'k'", capacity, rate, spend,
                      wait, ask)
