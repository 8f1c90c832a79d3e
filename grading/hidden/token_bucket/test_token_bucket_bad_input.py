"""Hidden checks for token_bucket: bad arguments raise the stated errors and change nothing
(rule 7, Errors)."""

from __future__ import annotations

import enum
import functools
import math
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from token_bucket import Decision, KeyedLimiter, TokenBucket
from token_bucket_helpers import Clock, expect, make_bucket, names, refused_by_both

pytestmark = pytest.mark.category("bad_input")

_BAD_VALUES = [0, -1, -0.5, -1234567, math.nan, math.inf, -math.inf]
_NOT_NUMBERS: list[Any] = ["10", None, True, [1], 1 + 0j]  # Any: they go where floats do
_CLASSES = pytest.mark.parametrize("cls", [TokenBucket, KeyedLimiter],
                                   ids=["TokenBucket", "KeyedLimiter"])


@pytest.mark.points(2)
@_CLASSES
def test_bad_capacity_or_rate_is_a_value_error_naming_it(cls: type) -> None:
    """capacity or rate not a finite number > 0 raises ValueError naming the value."""
    for field in ("capacity", "rate"):
        for value in _BAD_VALUES:
            args = {"capacity": 5.0, "rate": 1.0, field: value}
            what = f"{cls.__name__}({field}={value!r})"
            make = functools.partial(cls, args["capacity"], args["rate"])
            error = expect(ValueError, make, what)
            assert names(str(error), value) and field in str(error), (
                f"{what}: {str(error)!r} does not name {field} and {value!r} (as passed or as a "
                f"float)")


@_CLASSES
def test_non_number_capacity_or_rate_is_a_type_error(cls: type) -> None:
    """capacity or rate that is not a number (a str, None, a bool, a complex) raises TypeError
    naming the parameter."""
    for field in ("capacity", "rate"):
        for value in _NOT_NUMBERS:
            args: dict[str, object] = {"capacity": 5.0, "rate": 1.0, field: value}
            what = f"{cls.__name__}({field}={value!r})"
            error = expect(TypeError, functools.partial(cls, args["capacity"], args["rate"]), what)
            assert field in str(error), f"{what}: {str(error)!r} does not name {field}"


@pytest.mark.points(2)
def test_bad_tokens_is_a_value_error_and_takes_nothing() -> None:
    """tokens not finite, not > 0, or above capacity raises ValueError naming it; nothing taken."""
    bucket, _ = make_bucket(capacity=5, rate=1)
    keyed = KeyedLimiter(5, 1, clock=Clock())
    for value in (0, 0.0, -2, math.nan, math.inf, 5.5, 5.0000001, 1e9):
        for what, call in ((f"TokenBucket.try_acquire({value!r})",
                            functools.partial(bucket.try_acquire, value)),
                           (f"KeyedLimiter.try_acquire('k', {value!r})",
                            functools.partial(keyed.try_acquire, "k", value))):
            error = expect(ValueError, call, what)
            assert names(str(error), value) and "tokens" in str(error), (
                f"{what}: {str(error)!r} does not name tokens and {value!r} (as passed or as a "
                f"float)")
    assert bucket.available() == 5, "a rejected call changed the bucket"
    assert keyed.try_acquire("k", 5).allowed, "a rejected call changed the key's bucket"


def test_non_number_tokens_is_a_type_error() -> None:
    """tokens that is not a number (a str, None, a bool, a complex) raises TypeError naming it."""
    bucket, _ = make_bucket(capacity=5, rate=1)
    keyed = KeyedLimiter(5, 1, clock=Clock())
    for value in _NOT_NUMBERS:
        for what, call in ((f"TokenBucket.try_acquire({value!r})",
                            functools.partial(bucket.try_acquire, value)),
                           (f"KeyedLimiter.try_acquire('k', {value!r})",
                            functools.partial(keyed.try_acquire, "k", value))):
            error = expect(TypeError, call, what)
            assert "tokens" in str(error), f"{what}: {str(error)!r} does not name tokens"


def test_a_rejected_call_holds_no_new_bucket() -> None:
    """A rejected KeyedLimiter call changes nothing: no bucket for its key, no change to others."""
    clock = Clock(50.0)
    limiter = KeyedLimiter(5, 1, clock=clock)
    assert limiter.try_acquire("debt", 5).allowed
    bad: list[Any] = [0, -1, math.nan, math.inf, 6, "1", None, True]
    for i, value in enumerate(bad):
        expect((TypeError, ValueError), functools.partial(limiter.try_acquire, f"new-{i}", value),
               f"try_acquire('new-{i}', {value!r})")
        assert len(limiter) == 1, (f"after a rejected try_acquire('new-{i}', {value!r}), "
                                   f"len(limiter) is {len(limiter)}: it made a bucket")
        expect((TypeError, ValueError), functools.partial(limiter.try_acquire, "debt", value),
               f"try_acquire('debt', {value!r})")
    clock.now = 51.0
    got = limiter.try_acquire("debt", 2)
    assert got == Decision(False, 1.0), f"after rejected calls, the drained key answered {got}"


def test_other_numbers_are_taken_at_their_value_or_refused() -> None:
    """Fraction or Decimal: taken at its value or TypeError; an int too large for a float:
    ValueError or OverflowError. Nothing is taken by a call that raises."""
    others: list[Any] = [Fraction(1, 2), Decimal("0.5")]
    for value in others:
        bucket, _ = make_bucket(capacity=2, rate=1)
        try:
            got = bucket.try_acquire(value)
        except TypeError:
            assert bucket.available() == 2, f"try_acquire({value!r}) raised and took tokens"
        else:
            assert got.allowed and bucket.available() == 1.5, (
                f"try_acquire({value!r}) returned {got}, leaving {bucket.available()} of 2")
        try:
            wide, _ = make_bucket(capacity=value * 5, rate=1)
        except TypeError:
            continue
        assert wide.try_acquire(2.5).allowed and not wide.try_acquire(0.5).allowed, (
            f"a bucket of capacity {value * 5!r} did not hold 2.5 tokens")
    huge = 10**400
    for args in ((huge, 1), (5, huge)):
        expect((ValueError, OverflowError), functools.partial(TokenBucket, *args),
               f"TokenBucket{args!r}".replace(str(huge), "10**400"))
        expect((ValueError, OverflowError), functools.partial(KeyedLimiter, *args),
               f"KeyedLimiter{args!r}".replace(str(huge), "10**400"))
    refused_by_both((ValueError, OverflowError), huge, "10**400", capacity=5)


class _Tier(enum.IntEnum):
    """An int subclass, as a configuration enum hands it over."""

    GOLD = 4


class _Tokens(float):
    """A float subclass that overrides nothing (as numpy.float64 is one)."""


def test_int_and_float_subclasses_are_numbers() -> None:
    """A subclass of int or float (an IntEnum, a float subclass such as numpy.float64) is a
    number: taken at its value for capacity, rate and tokens."""
    for keyed in (False, True):
        what = (f"{'KeyedLimiter' if keyed else 'TokenBucket'}(capacity=IntEnum 4, "
                f"rate=float subclass 2.0)")
        try:
            acquire: Callable[[float], Decision]
            if keyed:
                limiter = KeyedLimiter(_Tier.GOLD, _Tokens(2.0), clock=Clock())
                acquire = functools.partial(limiter.try_acquire, "k")
            else:
                acquire = TokenBucket(_Tier.GOLD, _Tokens(2.0), clock=Clock()).try_acquire
            got = [acquire(_Tokens(3.0)), acquire(_Tier.GOLD)]
        except (TypeError, ValueError) as exc:
            pytest.fail(f"{what}, then try_acquire of a float subclass 3.0 and an IntEnum 4, "
                        f"raised {type(exc).__name__}: {exc}; an int or float subclass is a "
                        f"number")
        want = [Decision(True, 0.0), Decision(False, 1.5)]
        assert got == want, (f"{what}: try_acquire(3.0) then try_acquire(4), both subclasses, "
                             f"returned {got}; expected {want}")


def test_a_positive_number_that_rounds_to_zero_is_refused() -> None:
    """A number is taken as float(value): a Fraction > 0 that rounds to 0.0 as a float is a
    capacity, rate or tokens of 0.0, refused (ValueError, or TypeError where Fractions are)."""
    tiny: Any = Fraction(1, 10**400)  # Any: it goes where floats do
    for cls in (TokenBucket, KeyedLimiter):
        for args, field in (((tiny, 1), "capacity"), ((1, tiny), "rate")):
            expect((ValueError, TypeError), functools.partial(cls, *args, clock=Clock()),
                   f"{cls.__name__}({field}=Fraction(1, 10**400)), 0.0 as a float")
    refused_by_both((ValueError, TypeError), tiny, "Fraction(1, 10**400), 0.0 as a float",
                    capacity=2)


def test_a_fraction_or_decimal_taken_is_taken_as_a_float() -> None:
    """A Fraction or Decimal that is taken is taken as float(value), once: a capacity of
    Fraction(1, 10) or Decimal('0.1') holds the float 0.1 and grants a request of 0.1."""
    tenth: list[Any] = [Fraction(1, 10), Decimal("0.1")]  # Any: they go where floats do
    for value in tenth:
        for cls in (TokenBucket, KeyedLimiter):
            what = f"{cls.__name__}(capacity={value!r}, rate=1)"
            try:
                limiter = cls(value, 1, clock=Clock())
            except TypeError:
                continue  # refused where it is passed: allowed
            if isinstance(limiter, TokenBucket):
                level = limiter.available()
                assert level == 0.1, (
                    f"{what}: available() on the new bucket returned {level!r}; a number is "
                    f"taken as float(value), so the bucket holds 0.1")
                acquire: Callable[[float], Decision] = limiter.try_acquire
            else:
                acquire = functools.partial(limiter.try_acquire, "k")
            try:
                got = acquire(0.1)
            except (TypeError, ValueError) as exc:
                pytest.fail(f"{what}, then try_acquire(0.1), raised {type(exc).__name__}: {exc}; "
                            f"a capacity of {value!r} is the float 0.1, and a request of exactly "
                            f"capacity is valid")
            assert got == Decision(True, 0.0), (
                f"{what}, then try_acquire(0.1), returned {got}; expected Decision(True, 0.0)")


@pytest.mark.points(2)
@_CLASSES
def test_a_rejected_call_loses_no_refill(cls: type) -> None:
    """A rejected call changes nothing: the refill earned before it is still there after it
    (TokenBucket and KeyedLimiter)."""
    clock = Clock(0.0)
    limiter = cls(4, 1, clock=clock)
    acquire: Callable[[Any], Decision] = (
        limiter.try_acquire if cls is TokenBucket else functools.partial(limiter.try_acquire, "k"))
    assert acquire(4).allowed, "a new bucket's 4 tokens were refused"
    clock.now = 2.0  # 2 tokens refilled at rate 1/s
    bad: list[Any] = [5, 0, math.nan, "1", None]
    for value in bad:
        expect((TypeError, ValueError), functools.partial(acquire, value),
               f"{cls.__name__}.try_acquire({value!r}) at t=2.0")
    got = [acquire(2), acquire(0.5)]
    want = [Decision(True, 0.0), Decision(False, 0.5)]
    assert got == want, (
        f"{cls.__name__}(4, 1) drained at t=0; at t=2.0 (2 tokens refilled) rejected calls with "
        f"tokens {bad!r}, then try_acquire(2) and try_acquire(0.5) returned {got}; expected "
        f"{want}: a rejected call lost the refill")
