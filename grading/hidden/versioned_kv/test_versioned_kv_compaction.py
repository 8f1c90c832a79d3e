"""Hidden checks for versioned_kv: compaction keeps every read at or above its point, forgets
what is below, and drops keys left with only a delete (rule 9)."""

from __future__ import annotations

import gc
import weakref

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st
from versioned_kv import CompactedError, VersionedKV
from versioned_kv_helpers import KEYS, OPS, PHASES, apply, call, compaction_store, read, store


@pytest.mark.points(2)
def test_compaction_keeps_reads_at_the_compaction_point() -> None:
    """After compact(c), reads at c still see each key's latest write at or below c."""
    kv = compaction_store()
    call(kv, "compact", 5)
    got = {key: read(kv, key, 5) for key in KEYS}
    want = {"a": "z", "b": "KeyError", "c": "w"}
    assert got == want, f"reads at 5 after compact(5) gave {got}, expected {want}"
    snapshot = call(kv, "snapshot", 5)
    assert snapshot == {"a": "z", "c": "w"}, f"snapshot(5) after compact(5) is {snapshot}"


_WORKED = [("a", 1), ("b", 2), ("a", 3), ("a", None), ("b", 4)]  # the statement's table


@pytest.mark.timeout(60)  # room to shrink a failing example: a wrong answer fails, never times out
@settings(max_examples=50, report_multiple_bugs=False, phases=PHASES)
@example(ops=_WORKED, pick=0)  # compact(0): nothing to forget
@example(ops=_WORKED, pick=3)  # compact(3): exactly at a write of the key read
@example(ops=_WORKED, pick=4)  # compact(4): exactly at a delete, which drops `a`
@example(ops=_WORKED, pick=5)  # compact(latest)
@example(ops=[("a", 1), ("b", 2), ("b", 3)], pick=1)  # `b` written only after the point
@example(ops=[("a", 0), ("a", None), ("a", 0)], pick=2)  # a kept tombstone, then a re-put
@given(ops=OPS, pick=st.integers(0, 100))
def test_compaction_leaves_every_read_at_or_above_the_point_unchanged(
    ops: list[tuple[str, int | None]], pick: int
) -> None:
    """compact(c) changes no snapshot at any version from c to the latest."""
    kv = apply(ops)
    c = pick % (kv.version + 1)
    before = {v: kv.snapshot(v) for v in range(c, kv.version + 1)}
    reads = {(k, v): read(kv, k, v) for k in KEYS for v in range(c, kv.version + 1)}
    call(kv, "compact", c)
    after = {v: call(kv, "snapshot", v) for v in range(c, kv.version + 1)}
    assert after == before, f"compact({c}) changed snapshots: {before} became {after}"
    changed = {at: (got, read(kv, *at)) for at, got in reads.items() if read(kv, *at) != got}
    assert not changed, f"compact({c}) changed reads (before, after): {changed}"


def test_read_below_the_compaction_point_raises_compacted_error() -> None:
    """Below the compaction point every get and snapshot raises CompactedError, any key."""
    kv = compaction_store()
    call(kv, "compact", 4)
    for key in ("a", "b", "c", "never-written"):
        got = [read(kv, key, v) for v in (0, 3)]
        assert got == ["CompactedError"] * 2, f"get({key!r}, 0 / 3) after compact(4) gave {got}"
    for v in (0, 3):
        with pytest.raises(CompactedError):
            kv.snapshot(v)


def test_compacting_below_an_earlier_point_is_a_no_op() -> None:
    """compact(c) below an earlier compaction point changes nothing."""
    kv = compaction_store()
    call(kv, "compact", 4)
    histories = {key: kv.history(key) for key in KEYS}
    call(kv, "compact", 2)
    got = {key: kv.history(key) for key in KEYS}
    assert got == histories, f"compact(2) after compact(4) changed histories {histories} to {got}"
    got_reads = [read(kv, "a", 3), read(kv, "a", 4)]
    assert got_reads == ["CompactedError", "z"], (
        f"get('a', 3), get('a', 4) after compact(4), compact(2) gave {got_reads}: "
        "expected CompactedError, 'z'"
    )


@pytest.mark.category("edge_cases")
def test_compacting_at_the_latest_version_is_allowed() -> None:
    """compact(latest) is allowed and keeps every read at the latest version."""
    kv = compaction_store()
    call(kv, "compact", 6)
    got = call(kv, "snapshot")
    assert got == {"a": "q", "c": "w"}, f"snapshot() after compact(6): {got}"
    assert kv.history("a") == [(6, "q")], f"history('a') after compact(6): {kv.history('a')}"
    empty: VersionedKV[str] = VersionedKV()
    call(empty, "compact", 0)
    assert call(empty, "snapshot") == {}, "compact(0) on a new store must leave it empty"


def test_history_after_compaction_starts_at_the_latest_write_at_or_below_the_point() -> None:
    """After compact(c), history(k) is the latest write at or below c and all after it."""
    kv = compaction_store()
    call(kv, "compact", 4)
    got = {key: kv.history(key) for key in KEYS}
    want = {"a": [(4, "z"), (6, "q")], "b": [(2, "y"), (5, None)], "c": [(3, "w")]}
    assert got == want, f"histories after compact(4) are {got}, expected {want}"


@pytest.mark.points(2)
def test_compaction_keeps_every_write_of_a_key_first_written_after_the_point() -> None:
    """compact(c) keeps the whole history of a key first written after c."""
    kv = store(("a", "x"), ("b", "1"), ("b", "2"), ("a", "y"), ("b", "3"))
    call(kv, "compact", 1)
    got = call(kv, "history", "b")
    assert got == [(2, "1"), (3, "2"), (5, "3")], f"history('b') after compact(1) is {got}"
    reads = [read(kv, "b", v) for v in range(1, 6)]
    want = ["KeyError", "1", "2", "2", "3"]
    assert reads == want, f"get('b', 1..5) after compact(1) gave {reads}, expected {want}"


@pytest.mark.category("edge_cases")
def test_a_kept_tombstone_stays_in_history() -> None:
    """A delete at or below c stays in history when later writes follow it."""
    kv = store(("a", "x"), ("a", None), ("b", "y"), ("a", "z"))
    call(kv, "compact", 3)
    assert kv.history("a") == [(2, None), (4, "z")], f"history('a') is {kv.history('a')}"
    got = [read(kv, "a", 3), read(kv, "a", 4)]
    assert got == ["KeyError", "z"], f"get('a', 3), get('a', 4) after compact(3) gave {got}"


def test_a_key_deleted_at_or_below_the_point_is_dropped() -> None:
    """compact(c) drops a key whose last write at or below c is a delete with nothing after."""
    kv = compaction_store()
    call(kv, "compact", 5)
    assert kv.history("b") == [], f"history('b') after compact(5) is {kv.history('b')}"
    with pytest.raises(KeyError):
        kv.delete("b")
    got = call(kv, "put", "b", "new")
    assert got == 7, f"put('b', 'new') returned {got}: compact changes no version, so 7"
    assert kv.history("b") == [(7, "new")], f"history of a re-put key is {kv.history('b')}"
    assert call(kv, "snapshot", 6) == {"a": "q", "c": "w"}, "the re-put changed snapshot(6)"


def test_a_key_deleted_after_an_earlier_compaction_is_dropped_by_the_next() -> None:
    """A key written, compacted, then deleted is dropped by the next compaction like any other:
    compaction looks at every key, not only those put since the last one."""
    kv = store(("a", "x"), ("b", "y"))
    call(kv, "compact", 2)
    call(kv, "delete", "a")
    call(kv, "compact", 3)
    got = (call(kv, "history", "a"), call(kv, "history", "b"))
    assert got == ([], [(2, "y")]), (
        f"after put('a', 'x'), put('b', 'y'), compact(2), delete('a'), compact(3): history('a') "
        f"and history('b') gave {got}, expected ([], [(2, 'y')]): 'a' has only its delete left"
    )


class _Blob:
    """A value a weak reference can watch."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return f"_Blob({self.name!r})"


def _compacted_store() -> tuple[VersionedKV[_Blob], dict[str, weakref.ref[_Blob]]]:
    """k: k1@1, k3@3, k5@5; j: j2@2, deleted@4; then compact(4). Only weak references to
    the values leave this function."""
    kv: VersionedKV[_Blob] = VersionedKV()
    blobs = {name: _Blob(name) for name in ("k1", "j2", "k3", "k5")}
    call(kv, "put", "k", blobs["k1"])
    call(kv, "put", "j", blobs["j2"])
    call(kv, "put", "k", blobs["k3"])
    call(kv, "delete", "j")
    call(kv, "put", "k", blobs["k5"])
    call(kv, "compact", 4)
    return kv, {name: weakref.ref(blob) for name, blob in blobs.items()}


@pytest.mark.points(2)
def test_compaction_frees_forgotten_values() -> None:
    """Once compact returns, the store holds no reference to a value it forgot (compaction
    bounds memory; hiding old entries is not enough)."""
    kv, refs = _compacted_store()
    gc.collect()
    alive = sorted(name for name, ref in refs.items() if ref() is not None)
    assert alive == ["k3", "k5"], (
        f"after compact(4) the values still alive are {alive}; expected only k3 (what `k` "
        "reads at 4) and k5: k1 and j2 (a key deleted at 4, so dropped) were forgotten"
    )
    got = [read(kv, "k", 4), read(kv, "k"), read(kv, "j")]
    assert [repr(x) for x in got] == ["_Blob('k3')", "_Blob('k5')", "'KeyError'"], f"reads: {got}"


def _read_everything_then_compact() -> tuple[VersionedKV[_Blob], weakref.ref[_Blob]]:
    """k: old@1, new@2; every read at every version (get, snapshot, history), then compact(2).
    Only a weak reference to the old value leaves this function."""
    kv: VersionedKV[_Blob] = VersionedKV()
    old = _Blob("old")
    call(kv, "put", "k", old)
    for _ in range(2):
        read(kv, "k", 1), read(kv, "k"), call(kv, "snapshot", 1), call(kv, "snapshot")
        call(kv, "history", "k")
    call(kv, "put", "k", _Blob("new"))
    for version in (1, 2):
        read(kv, "k", version), call(kv, "snapshot", version)
    call(kv, "compact", 2)
    return kv, weakref.ref(old)


def test_compaction_frees_values_that_reads_returned_before() -> None:
    """Compaction frees a forgotten value also after get, snapshot and history returned it (no
    cache of past reads keeps it alive)."""
    kv, ref = _read_everything_then_compact()
    gc.collect()
    assert ref() is None, \
        "the value written at 1 and read at 1 (get, snapshot, history) is still referenced " \
        "after put at 2 and compact(2): does a cache of past reads keep it?"
    assert repr(read(kv, "k", 2)) == "_Blob('new')", f"get('k', 2) gave {read(kv, 'k', 2)!r}"
