"""Hidden checks for versioned_kv: the cost of a read as a history grows and of a put as the
store grows, as ratios measured in the same run (rule 10)."""

from __future__ import annotations

import contextlib
import random
from collections.abc import Callable

import pytest
from versioned_kv import VersionedKV
from versioned_kv_helpers import best_of

pytestmark = [pytest.mark.category("performance"), pytest.mark.timeout(60)]


def _reads(length: int, count: int) -> Callable[[], None]:
    """`count` reads at random versions of a key written `length` times (among other writes)."""
    kv: VersionedKV[int] = VersionedKV()
    for i in range(length):
        kv.put("k", i)
        if i % 4 == 0:
            kv.put("other", i)
    rng = random.Random(length)
    at = [rng.randrange(1, kv.version + 1) for _ in range(count)]

    def run() -> None:
        for v in at:
            with contextlib.suppress(LookupError):  # time the reads, whatever they return
                kv.get("k", v)

    return run


@pytest.mark.points(4)
def test_get_cost_grows_logarithmically_with_history() -> None:
    """A read in an 8192-write history costs within a small factor of one in 64 writes."""
    t_small, t_big = best_of(5, _reads(64, 400), _reads(8192, 400))
    ratio = t_big / t_small
    # O(log h): about 1-2x here; a scan over the history: 100x and more.
    assert ratio < 12, (
        f"400 reads took {t_big * 1e3:.2f} ms at an 8192-write history and "
        f"{t_small * 1e3:.2f} ms at 64 writes ({ratio:.1f}x for 128x the history): "
        "a read should cost O(log h), not O(h)"
    )


def _reads_after_others(others: int, count: int) -> Callable[[], None]:
    """`count` reads at random versions of a key written once, then `others` writes to other
    keys (one of them deleted and written again now and then)."""
    kv: VersionedKV[int] = VersionedKV()
    kv.put("k", 0)
    for i in range(others):
        if i % 16 == 15:
            kv.delete("other")
        else:
            kv.put("other" if i % 2 else f"key{i}", i)
    rng = random.Random(others)
    at = [rng.randrange(1, kv.version + 1) for _ in range(count)]

    def run() -> None:
        for v in at:
            with contextlib.suppress(LookupError):
                kv.get("k", v)

    return run


@pytest.mark.points(2)
def test_get_cost_does_not_grow_with_writes_to_other_keys() -> None:
    """A read of a key written once costs about the same after 8192 writes to other keys as
    after 64 (the cost is in the key's own history, not the store's)."""
    t_small, t_big = best_of(5, _reads_after_others(64, 400), _reads_after_others(8192, 400))
    ratio = t_big / t_small
    # O(log h) with h = 1: about 1x; a scan back through a global log of writes: 100x and more.
    assert ratio < 12, (
        f"400 reads of a key written once took {t_big * 1e3:.2f} ms after 8192 writes to other "
        f"keys and {t_small * 1e3:.2f} ms after 64 ({ratio:.1f}x): a read should cost "
        "O(log h) in the key's own history"
    )


@pytest.mark.points(2)
def test_put_cost_stays_flat_as_the_store_grows() -> None:
    """A put into a store of 20000 writes costs within a small factor of one into a new store."""
    big: VersionedKV[int] = VersionedKV()
    for i in range(10000):
        big.put("k", i)
        big.put(f"key{i}", i)

    def put_fresh() -> None:
        kv: VersionedKV[int] = VersionedKV()
        for i in range(500):
            kv.put("k", i)

    def put_big() -> None:
        for i in range(500):
            big.put("k", i)

    t_small, t_big = best_of(7, put_fresh, put_big)
    ratio = t_big / t_small
    # Amortized O(1): about 1x; copying the history or the snapshot per put: 50x and more.
    assert ratio < 8, (
        f"500 puts took {t_big * 1e3:.2f} ms into a store of 20000 writes and "
        f"{t_small * 1e3:.2f} ms into a new store ({ratio:.1f}x): a put should cost O(1)"
    )
