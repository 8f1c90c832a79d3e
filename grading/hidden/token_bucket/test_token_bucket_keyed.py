"""Hidden checks for token_bucket, part 2: KeyedLimiter is independent buckets per key (rule 8)
that forgets only full ones (rule 9)."""

from __future__ import annotations

from fractions import Fraction

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from token_bucket import Decision, KeyedLimiter
from token_bucket_helpers import Clock, Model, drained_then_burst, ulp_bound


@settings(max_examples=100)
@given(ops=st.lists(st.tuples(st.sampled_from("abcd"), st.sampled_from([0.25, 1.0, 2.0, 4.0]),
                              st.sampled_from([0.0, 0.0, 0.125, 0.5, 1.0, 4.0])), max_size=50))
def test_keyed_limiter_matches_independent_buckets(ops: list[tuple[str, float, float]]) -> None:
    """KeyedLimiter behaves, per key, exactly like an independent bucket (an exact model)."""
    clock = Clock(10.0)
    limiter = KeyedLimiter(4, 2, clock=clock)
    model = Model(Fraction(4), Fraction(2))
    for i, (key, tokens, dt) in enumerate(ops):
        clock.now += dt
        got = limiter.try_acquire(key, tokens)
        want = model.acquire(key, Fraction(tokens), Fraction(clock.now))
        assert got == want, f"call {i}: try_acquire({key!r}, {tokens}) at t={clock.now} " \
                            f"returned {got}, an independent bucket says {want}"


@pytest.mark.points(3)
@pytest.mark.category("edge_cases")
def test_keyed_limiter_never_forgets_a_bucket_in_debt() -> None:
    """A drained key stays drained however many other keys arrive (no eviction of debt)."""
    limiter, clock = drained_then_burst(4, 1, "heavy", 20_000, 1, prefix="tenant-")
    clock.now = 1.0
    decision = limiter.try_acquire("heavy", 4)
    assert decision == Decision(False, 3.0), (
        f"the drained key got {decision} after 20,000 other keys; its debt was forgiven")


@pytest.mark.category("edge_cases")
@pytest.mark.parametrize(("start", "capacity", "rate"), [
    (0.0, 2.0, 0.5), (1e6 + 0.1, 0.3, 0.1), (2.0**40 + 0.5, 1 / 3, 0.7)],
    ids=["t=0", "t=1e6", "t=2**40"])
def test_full_buckets_are_dropped_behind_a_busy_key(start: float, capacity: float,
                                                    rate: float) -> None:
    """Rule 9 while one key stays busy: capacity / rate seconds (and 8 ulps) after a burst over
    300 keys, one more call leaves at most the busy key and the new one."""
    clock = Clock(start)
    limiter = KeyedLimiter(capacity, rate, clock=clock)
    assert limiter.try_acquire("busy", capacity).allowed
    for i in range(300):
        limiter.try_acquire(f"k{i}", min(capacity, capacity * (i % 5 + 1) / 5))
    full = capacity / rate
    for quarter in (1, 2, 3, 4):  # the busy key takes half of what each quarter refills
        clock.now = start + full * quarter / 4
        assert limiter.try_acquire("busy", capacity / 8).allowed, (
            f"the busy key was refused {capacity / 8!r} tokens at t={clock.now!r}")
    clock.now = start + full + ulp_bound(start + full, capacity, rate)
    limiter.try_acquire("late", capacity / 2)
    assert len(limiter) <= 2, (
        f"{len(limiter)} buckets held at t={clock.now!r}: the 300 burst keys, idle "
        f"{clock.now - start!r} s since t={start!r}, refilled to capacity {capacity!r} at "
        f"rate {rate!r}; only the busy key and the new one are not full")
    assert not limiter.try_acquire("busy", capacity).allowed, "the busy key's debt was forgiven"


@pytest.mark.category("edge_cases")
def test_a_dropped_bucket_may_start_afresh_after_the_clock_steps_back() -> None:
    """A full bucket, then the clock steps back: the key goes on as the bucket it had, or, once
    dropped, as a new one counting time from its own readings (both are right)."""
    calls = [("a", 1, 3.0), ("b", 1, 5.0), ("a", 2, -54.0), ("a", 1, -54.0), ("a", 2, -53.0),
             ("a", 2, 4.0), ("a", 1, 4.0), ("a", 1, 7.0)]
    clock = Clock()
    limiter = KeyedLimiter(2, 1, clock=clock)
    kept, dropped = Model(Fraction(2), Fraction(1)), Model(Fraction(2), Fraction(1))
    got, as_kept, as_dropped = [], [], []
    for i, (key, tokens, now) in enumerate(calls):
        clock.now = now
        got.append(limiter.try_acquire(key, tokens))
        as_kept.append(kept.acquire(key, Fraction(tokens), Fraction(now)))
        as_dropped.append(dropped.acquire(key, Fraction(tokens), Fraction(now)))
        if i == 1:
            del dropped.state["a"]  # full at 5.0 (refilled since 3.0): forgotten
    lines = "\n".join(f"  try_acquire({k!r}, {n}) at t={t}: {g}, kept {a}, dropped {b}"
                      for (k, n, t), g, a, b in zip(calls, got, as_kept, as_dropped, strict=True))
    assert got in (as_kept, as_dropped), (
        f"the answers match neither the bucket key 'a' had (greatest reading 3.0) nor a new one "
        f"counting from -54:\n{lines}")


@pytest.mark.category("edge_cases")
@pytest.mark.parametrize("key", ["busy", "k0"], ids=["the-busy-key", "a-burst-key"])
def test_a_call_on_a_held_key_drops_full_buckets_too(key: str) -> None:
    """Rule 9's one more call may be on a key already held: capacity / rate seconds after a
    burst over 300 keys, a call on a held key leaves at most 2 buckets."""
    limiter, clock = drained_then_burst(2, 0.5, "busy", 300, 1)
    clock.now = 4.0  # capacity / rate after the burst: every bucket is full
    limiter.try_acquire(key, 1)
    assert len(limiter) <= 2, (
        f"{len(limiter)} buckets held after try_acquire({key!r}, 1) at t=4.0: the burst keys "
        f"(capacity 2, rate 0.5, 1 token each taken at t=0) are all full again; a call on a "
        f"key already held must drop them as a call on a new key does")


@pytest.mark.category("edge_cases")
def test_a_refused_call_drops_full_buckets_too() -> None:
    """Rule 9's one more call may be refused: capacity / rate seconds after a burst over 300
    keys, a refused call on a drained key leaves at most 2 buckets."""
    limiter, clock = drained_then_burst(2, 0.5, "busy", 300, 2)
    clock.now = 3.0
    assert limiter.try_acquire("busy", 1.5).allowed, "the busy key was refused 1.5 at t=3.0"
    clock.now = 4.0  # capacity / rate after the burst: every burst bucket is exactly full
    decision = limiter.try_acquire("busy", 1)
    assert decision == Decision(False, 1.0), (
        f"try_acquire('busy', 1) at t=4.0 returned {decision}; the key holds 0.5 of the 1 token "
        f"asked (rate 0.5): expected Decision(False, 1.0)")
    assert len(limiter) <= 2, (
        f"{len(limiter)} buckets held after a refused try_acquire('busy', 1) at t=4.0: the 300 "
        f"burst keys (capacity 2, rate 0.5, drained at t=0) are all full again; a refused call "
        f"must drop them as a granted one does")


@pytest.mark.category("edge_cases")
@pytest.mark.parametrize(("start", "capacity", "rate"), [(0.0, 2.0, 0.5), (1024.0, 0.75, 0.375)],
                         ids=["t=0", "t=1024"])
def test_a_bucket_refilled_to_exactly_capacity_is_full(start: float, capacity: float,
                                                       rate: float) -> None:
    """A bucket whose refill reaches capacity exactly is full: exactly capacity / rate seconds
    after draining 300 keys (exact arithmetic), one more call leaves at most 2 buckets."""
    clock = Clock(start)
    limiter = KeyedLimiter(capacity, rate, clock=clock)
    for i in range(300):
        assert limiter.try_acquire(f"k{i}", capacity).allowed
    clock.now = start + capacity / rate  # the refill is exactly capacity: powers of two
    limiter.try_acquire("late", capacity / 2)
    assert len(limiter) <= 2, (
        f"{len(limiter)} buckets held at t={clock.now!r}: 300 keys drained at t={start!r} have "
        f"refilled exactly to capacity {capacity!r} at rate {rate!r}; a bucket at capacity is "
        f"full, not only one whose refill would go beyond it")


def test_any_str_is_a_key() -> None:
    """Any str is a key, as it arrives (empty, blank, with stray whitespace, non-ASCII, a lone
    surrogate): equal strings share one bucket, unequal ones do not."""
    keys = ["", " ", "tenant", "Tenant", "tenant ", "\ttenant", "tenant\n", "\u00e9", "e\u0301",
            "\x00",
            b"tenant-\xff".decode("utf-8", "surrogateescape"), "\ud800", "t" * 10_000]
    limiter = KeyedLimiter(1, 1, clock=Clock(5.0))
    for rounds, want in ((1, True), (2, False)):
        for key in keys:
            same = "".join(list(key))  # an equal string, another object
            try:
                got = limiter.try_acquire(same, 1)
            except Exception as exc:  # reported as a failure with the key that raised it
                pytest.fail(f"try_acquire({key[:20]!r}, 1) raised {type(exc).__name__}: {exc}; "
                            "any str is a key")
            assert got.allowed is want, (
                f"call {rounds} of try_acquire({key[:20]!r}, 1) on capacity 1 returned {got}: "
                f"each of {len(keys)} distinct keys has a bucket of its own")


@pytest.mark.points(2)
@pytest.mark.category("edge_cases")
def test_a_clock_stepping_back_on_another_key_mints_nothing() -> None:
    """Per key, a clock jittering 100 -> 40 -> 100 mints nothing, whichever keys are called
    while it is back (rule 6 through rule 8)."""
    clock = Clock(100.0)
    limiter = KeyedLimiter(10, 1, clock=clock)
    assert limiter.try_acquire("a", 10).allowed, "a new key's 10 tokens were refused at t=100"
    clock.now = 40.0
    for key in ("b", "c"):
        got = limiter.try_acquire(key, 1)
        assert got == Decision(True, 0.0), f"try_acquire({key!r}, 1) on a new key returned {got}"
    clock.now = 100.0
    got = limiter.try_acquire("a", 10)
    assert got == Decision(False, 10.0), (
        f"key 'a' drained at t=100, the clock stepped back to 40 (calls on 'b' and 'c') and "
        f"came back to 100: try_acquire('a', 10) returned {got}; the climb back mints nothing, "
        f"expected Decision(False, 10.0)")
    clock.now = 104.0
    got = limiter.try_acquire("a", 10)
    assert got == Decision(False, 6.0), (
        f"key 'a' drained at t=100 (greatest reading), try_acquire('a', 10) at t=104 returned "
        f"{got}; expected Decision(False, 6.0)")


def test_a_lone_surrogate_is_a_key() -> None:
    """A key holding a lone surrogate (bytes decoded with surrogateescape) is a key like any
    other, and its own: no other str shares its bucket, not even one its bytes would spell."""
    keys = [b"tenant-\xff".decode("utf-8", "surrogateescape"), "tenant-\udcc3\udcbf",
            "tenant-\xff", "tenant-\udcfe", "\ud800"]
    limiter = KeyedLimiter(1, 1, clock=Clock(5.0))
    for rounds, want in ((1, True), (2, False)):
        for key in keys:
            try:
                got = limiter.try_acquire(key, 1)
            except Exception as exc:  # reported as a failure with the key that raised it
                pytest.fail(f"try_acquire({key!r}, 1) raised {type(exc).__name__}: {exc}; a str "
                            "with a lone surrogate is a key")
            assert got.allowed is want, (
                f"call {rounds} of try_acquire({key!r}, 1) on capacity 1 returned {got}: each of "
                f"{len(keys)} distinct keys has a bucket of its own")


# Unequal ids whose short checksums collide: CRC-32 (found by search) and Adler-32.
_ALIKE = [("tenant-29685295", "tenant-32060020"), ("tenant-120", "tenant-201")]


def test_keys_whose_checksums_collide_are_two_keys() -> None:
    """Keys are compared as strings, not by a short hash: two tenant ids with the same CRC-32
    (or Adler-32) still have a bucket each."""
    limiter = KeyedLimiter(1, 1, clock=Clock(5.0))
    for first, second in _ALIKE:
        for key in (first, second):
            got = limiter.try_acquire(key, 1)
            assert got == Decision(True, 0.0), (
                f"try_acquire({key!r}, 1) on capacity 1 returned {got} after one call on "
                f"{first!r} only: {first!r} and {second!r} are two keys (they share a 32-bit "
                f"checksum, not a bucket)")


@pytest.mark.points(2)
@pytest.mark.category("edge_cases")
@pytest.mark.parametrize(("capacity", "rate"), [(1.0, 1.0), (0.3, 0.1), (5e6, 1e3),
                                                (2e-6, 1e-6)],
                         ids=["1/1", "0.3/0.1", "5e6/1e3", "2e-6/1e-6"])
def test_a_bucket_a_hair_short_of_full_is_not_dropped(capacity: float, rate: float) -> None:
    """A bucket one part in 10**10 short of capacity is not full: a call on another key keeps
    it, and its key's request of the whole capacity is still refused."""
    clock = Clock(0.0)
    limiter = KeyedLimiter(capacity, rate, clock=clock)
    assert limiter.try_acquire("a", capacity).allowed, f"a new key's {capacity!r} was refused"
    clock.now = capacity / rate * (1 - 1e-10)
    short = capacity - Fraction(clock.now) * Fraction(rate)  # exact: drained at t=0
    slack = Fraction(rate) * Fraction(ulp_bound(clock.now, capacity, rate))
    assert short > 1000 * slack  # far beyond rounding
    limiter.try_acquire("b", capacity / 2)  # any call: the lazy drop may run
    got = limiter.try_acquire("a", capacity)
    assert not got.allowed, (
        f"KeyedLimiter({capacity!r}, {rate!r}): key 'a' drained at t=0 holds "
        f"{capacity - float(short)!r} tokens at t={clock.now!r} ({float(short)!r} short of "
        f"capacity, where rounding allows {float(slack)!r}); after a call on 'b', "
        f"try_acquire('a', {capacity!r}) returned {got}: a bucket that short is not full, and "
        f"dropping it forgave its debt")
