"""Hidden checks for versioned_kv: every rule, the traps, bad input and the cost of a read."""

from __future__ import annotations

import contextlib
import gc
import random
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import Phase, given, settings, stateful
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from versioned_kv import CompactedError, VersionedKV

_KEYS = ("a", "b", "c")
# Hypothesis's explain phase costs seconds per failing test and adds little here.
_PHASES = [phase for phase in Phase if phase is not Phase.explain]


def _store(*writes: tuple[str, str | None]) -> VersionedKV[str]:
    """A store after `writes`, in order: (key, value) is a put, (key, None) a delete."""
    kv: VersionedKV[str] = VersionedKV()
    for key, value in writes:
        if value is None:
            kv.delete(key)
        else:
            kv.put(key, value)
    return kv


def _read(kv: VersionedKV[Any], key: str, version: int) -> object:
    """get(key, version), or "CompactedError" / "KeyError" if it raised one of those."""
    try:
        return kv.get(key, version)
    except CompactedError:
        return "CompactedError"
    except KeyError:
        return "KeyError"


@pytest.mark.points(2)
def test_versions_are_one_global_counter() -> None:
    """Puts and deletes on different keys share one version counter: 1, 2, 3, ..."""
    kv: VersionedKV[str] = VersionedKV()
    got = [kv.put("a", "x"), kv.put("b", "y"), kv.put("a", "z"), kv.delete("a"), kv.put("c", "w")]
    want = [1, 2, 3, 4, 5]
    assert got == want, f"put a, put b, put a, delete a, put c returned {got}, expected {want}"
    assert kv.version == 5, f"version after five writes is {kv.version}, expected 5"
    assert kv.get("b", 2) == "y", f"get('b', 2) returned {_read(kv, 'b', 2)!r}, expected 'y'"


@pytest.mark.category("edge_cases")
def test_a_new_store_is_empty_at_version_zero() -> None:
    """A new store is at version 0, reads nothing and has no history."""
    kv: VersionedKV[str] = VersionedKV()
    assert kv.version == 0, f"a new store has version {kv.version}, expected 0"
    assert kv.snapshot() == {}, f"snapshot() of a new store is {kv.snapshot()}, expected {{}}"
    assert kv.snapshot(0) == {}, f"snapshot(0) of a new store is {kv.snapshot(0)}"
    with pytest.raises(KeyError):
        kv.get("a")
    assert kv.history("a") == [], f"history('a') of a new store is {kv.history('a')}"


@pytest.mark.points(2)
def test_read_at_the_exact_write_version() -> None:
    """A read at exactly the version of a write sees that write."""
    kv = _store(("a", "x"), ("b", "y"), ("a", "z"), ("a", "q"))
    got = [_read(kv, "a", v) for v in (1, 3, 4)] + [_read(kv, "b", 2)]
    assert got == ["x", "z", "q", "y"], (
        f"get('a', 1), get('a', 3), get('a', 4), get('b', 2) returned {got}, "
        "expected ['x', 'z', 'q', 'y']: each version is exactly a write"
    )


@pytest.mark.points(2)
def test_read_between_writes_sees_the_earlier_write() -> None:
    """A read between two writes to a key sees the earlier one."""
    kv = _store(("a", "x"), ("b", "1"), ("b", "2"), ("a", "z"), ("b", "3"))
    got = [_read(kv, "a", v) for v in (2, 3, 5)]
    assert got == ["x", "x", "z"], f"get('a', 2 / 3 / 5) returned {got}, expected x, x, z"


@pytest.mark.points(2)
def test_version_of_another_key_reads_as_the_one_before() -> None:
    """At a version where another key was written, a key reads as at the version before."""
    kv = _store(("a", "x"), ("b", "y"), ("c", "w"), ("a", None), ("b", "v"))
    for key in ("a", "b"):
        for v in range(2, 6):
            got, before = _read(kv, key, v), _read(kv, key, v - 1)
            if (key == "a" and v == 4) or (key == "b" and v in (2, 5)):
                continue  # `key` itself was written at v
            assert got == before, f"get({key!r}, {v}) gave {got!r} but at {v - 1}: {before!r}"


@pytest.mark.points(2)
def test_deleted_key_raises_key_error() -> None:
    """After a delete, reads at that version and later raise KeyError."""
    kv = _store(("a", "x"), ("a", "y"), ("a", None), ("b", "z"))
    got = [_read(kv, "a", v) for v in (3, 4)]
    assert got == ["KeyError"] * 2, f"get('a', 3 / 4) after a delete at 3 gave {got}, not KeyError"
    with pytest.raises(KeyError):
        kv.get("a")
    assert kv.get("a", 2) == "y", "the delete at 3 must not change the read at 2"


@pytest.mark.points(2)
def test_read_before_first_write_raises_key_error() -> None:
    """A read below a key's first write raises KeyError."""
    kv = _store(("b", "y"), ("c", "w"), ("a", "x"), ("a", "z"))
    got = [_read(kv, "a", v) for v in (0, 1, 2)]
    assert got == ["KeyError"] * 3, f"get('a', 0 / 1 / 2) before its first write at 3 gave {got}"


def test_key_written_again_after_delete_is_live() -> None:
    """A key put again after a delete reads its new value."""
    kv = _store(("a", "x"), ("a", None), ("a", "y"))
    assert kv.get("a") == "y", f"get('a') after put/delete/put returned {_read(kv, 'a', 3)!r}"
    assert kv.snapshot() == {"a": "y"}, f"snapshot() is {kv.snapshot()}, expected {{'a': 'y'}}"


def test_get_defaults_to_the_latest_version() -> None:
    """get(k) and snapshot() read at the latest version."""
    kv = _store(("a", "x"), ("b", "y"), ("a", "z"))
    assert kv.get("a") == "z", f"get('a') returned {kv.get('a')!r}, expected 'z'"
    assert kv.snapshot() == {"a": "z", "b": "y"}, f"snapshot() returned {kv.snapshot()}"


@pytest.mark.category("edge_cases")
def test_any_value_but_none_is_stored() -> None:
    """Falsy and unhashable values are stored and read back as written."""
    kv: VersionedKV[object] = VersionedKV()
    values: list[object] = [0, "", False, [], {"x": [1]}, 0.0]
    for i, value in enumerate(values):
        kv.put(f"k{i}", value)
    got = [kv.get(f"k{i}") for i in range(len(values))]
    assert got == values, f"get() of the stored values returned {got}, expected {values}"
    assert kv.snapshot() == {f"k{i}": v for i, v in enumerate(values)}, "snapshot lost a value"


_OPS = st.lists(
    st.tuples(st.sampled_from(_KEYS), st.one_of(st.none(), st.integers(0, 5))), max_size=25
)


def _apply(ops: list[tuple[str, int | None]]) -> VersionedKV[int]:
    kv: VersionedKV[int] = VersionedKV()
    live: set[str] = set()
    for key, value in ops:
        if value is not None:
            kv.put(key, value)
            live.add(key)
        elif key in live:
            kv.delete(key)
            live.discard(key)
    return kv


@pytest.mark.category("edge_cases")
def test_snapshot_is_a_new_dict() -> None:
    """Changing the dict snapshot() returned does not change the store."""
    kv = _store(("a", "x"))
    kv.snapshot()["b"] = "y"
    kv.snapshot(1).pop("a")
    assert kv.snapshot() == {"a": "x"}, f"after editing a returned dict: {kv.snapshot()}"
    with pytest.raises(KeyError):
        kv.get("b")


def test_history_lists_every_write_with_none_for_deletes() -> None:
    """history(k) is every write to k as (version, value), oldest first, None for a delete."""
    kv = _store(("a", "x"), ("b", "y"), ("a", None), ("a", "z"), ("a", "z"))
    got = kv.history("a")
    want = [(1, "x"), (3, None), (4, "z"), (5, "z")]
    assert got == want, f"history('a') is {got}, expected {want}"
    assert kv.history("b") == [(2, "y")], f"history('b') is {kv.history('b')}"
    assert kv.history("never") == [], f"history of an unknown key is {kv.history('never')}"


def _compaction_store() -> VersionedKV[str]:
    """a: x@1, z@4; b: y@2, deleted@5; c: w@3. Latest version 6 (a: q@6)."""
    return _store(("a", "x"), ("b", "y"), ("c", "w"), ("a", "z"), ("b", None), ("a", "q"))


@pytest.mark.points(2)
def test_compaction_keeps_reads_at_the_compaction_point() -> None:
    """After compact(c), reads at c still see each key's latest write at or below c."""
    kv = _compaction_store()
    kv.compact(5)
    got = {key: _read(kv, key, 5) for key in _KEYS}
    want = {"a": "z", "b": "KeyError", "c": "w"}
    assert got == want, f"reads at 5 after compact(5) gave {got}, expected {want}"
    assert kv.snapshot(5) == {"a": "z", "c": "w"}, f"snapshot(5) is {kv.snapshot(5)}"


@settings(max_examples=50, report_multiple_bugs=False, phases=_PHASES)
@given(ops=_OPS, pick=st.integers(0, 100))
def test_compaction_leaves_every_read_at_or_above_the_point_unchanged(
    ops: list[tuple[str, int | None]], pick: int
) -> None:
    """compact(c) changes no snapshot at any version from c to the latest."""
    kv = _apply(ops)
    c = pick % (kv.version + 1)
    before = {v: kv.snapshot(v) for v in range(c, kv.version + 1)}
    kv.compact(c)
    after = {v: kv.snapshot(v) for v in range(c, kv.version + 1)}
    assert after == before, f"compact({c}) changed snapshots: {before} became {after}"


def test_read_below_the_compaction_point_raises_compacted_error() -> None:
    """Below the compaction point every get and snapshot raises CompactedError, any key."""
    kv = _compaction_store()
    kv.compact(4)
    for key in ("a", "b", "c", "never-written"):
        got = [_read(kv, key, v) for v in (0, 3)]
        assert got == ["CompactedError"] * 2, f"get({key!r}, 0 / 3) after compact(4) gave {got}"
    with pytest.raises(CompactedError):
        kv.snapshot(3)


def test_compacting_below_an_earlier_point_is_a_no_op() -> None:
    """compact(c) below an earlier compaction point changes nothing."""
    kv = _compaction_store()
    kv.compact(4)
    histories = {key: kv.history(key) for key in _KEYS}
    kv.compact(2)
    assert {key: kv.history(key) for key in _KEYS} == histories, "compact(2) after 4 changed"
    with pytest.raises(CompactedError):
        kv.get("a", 3)
    assert kv.get("a", 4) == "z", "compact(2) after compact(4) broke the read at 4"


@pytest.mark.category("edge_cases")
def test_compacting_at_the_latest_version_is_allowed() -> None:
    """compact(latest) is allowed and keeps every read at the latest version."""
    kv = _compaction_store()
    kv.compact(6)
    assert kv.snapshot() == {"a": "q", "c": "w"}, f"snapshot() after compact(6): {kv.snapshot()}"
    assert kv.history("a") == [(6, "q")], f"history('a') after compact(6): {kv.history('a')}"
    empty: VersionedKV[str] = VersionedKV()
    empty.compact(0)
    assert empty.snapshot() == {}, "compact(0) on a new store must leave it empty"


def test_history_after_compaction_starts_at_the_latest_write_at_or_below_the_point() -> None:
    """After compact(c), history(k) is the latest write at or below c and all after it."""
    kv = _compaction_store()
    kv.compact(4)
    got = {key: kv.history(key) for key in _KEYS}
    want = {"a": [(4, "z"), (6, "q")], "b": [(2, "y"), (5, None)], "c": [(3, "w")]}
    assert got == want, f"histories after compact(4) are {got}, expected {want}"


@pytest.mark.category("edge_cases")
def test_a_kept_tombstone_stays_in_history() -> None:
    """A delete at or below c stays in history when later writes follow it."""
    kv = _store(("a", "x"), ("a", None), ("b", "y"), ("a", "z"))
    kv.compact(3)
    assert kv.history("a") == [(2, None), (4, "z")], f"history('a') is {kv.history('a')}"
    with pytest.raises(KeyError):
        kv.get("a", 3)


def test_a_key_deleted_at_or_below_the_point_is_dropped() -> None:
    """compact(c) drops a key whose last write at or below c is a delete with nothing after."""
    kv = _compaction_store()
    kv.compact(5)
    assert kv.history("b") == [], f"history('b') after compact(5) is {kv.history('b')}"
    with pytest.raises(KeyError):
        kv.delete("b")
    assert kv.put("b", "new") == 7, "compact changes no version: the next put at 6 returns 7"
    assert kv.history("b") == [(7, "new")], f"history of a re-put key is {kv.history('b')}"


# Per case, calls that must raise the error; a ValueError's message must name the bad version.
_BAD_CALLS: dict[str, tuple[type[Exception], list[tuple[str, tuple[object, ...]]]]] = {
    "value-none": (TypeError, [("put", ("c", None))]),
    "key-not-str": (TypeError, [("put", (1, "v")), ("put", (b"a", "v")), ("put", (("a",), "v"))]),
    "delete-not-live": (KeyError, [("delete", ("b",)), ("delete", ("never",))]),
    "version-below-0": (ValueError, [("get", ("a", -1)), ("snapshot", (-1,))]),
    "version-above-latest": (ValueError, [("get", ("a", 5)), ("snapshot", (5,))]),
    "version-before-key": (ValueError, [("get", ("never", 5)), ("get", ("never", -1))]),
    "compact-out-of-range": (ValueError, [("compact", (-1,)), ("compact", (5,))]),
    "version-not-int": (
        TypeError,
        [("get", ("a", 1.5)), ("get", ("a", "1")), ("snapshot", (1.5,)), ("compact", ("1",))],
    ),
}


@pytest.mark.category("bad_input")
@pytest.mark.parametrize("case", list(_BAD_CALLS))
def test_a_bad_call_raises_the_documented_error_and_changes_nothing(case: str) -> None:
    """A bad call raises the documented error and changes nothing."""
    kv = _store(("a", "x"), ("b", "y"), ("a", "z"), ("b", None))
    before = ([kv.snapshot(v) for v in range(5)], kv.history("a"), kv.history("b"))
    error, calls = _BAD_CALLS[case]
    for method, args in calls:
        call = f"{method}({', '.join(map(repr, args))})"
        try:
            got: object = getattr(kv, method)(*args)
        except Exception as exc:
            got = exc
        assert isinstance(got, error), f"{call} gave {got!r}, expected {error.__name__}"
        named = error is not ValueError or str(args[-1]) in str(got)
        assert named, f"{call} raised {got!r}, whose message does not name {args[-1]}"
    after = ([kv.snapshot(v) for v in range(5)], kv.history("a"), kv.history("b"))
    assert kv.version == 4, f"after refused calls {case}, the version is {kv.version}, not 4"
    assert after == before, f"refused calls {case} changed the store: {before} became {after}"


class _Model(RuleBasedStateMachine):
    """The store against full snapshots per version and per-key histories, compacted eagerly."""

    def __init__(self) -> None:
        super().__init__()
        self.kv: VersionedKV[int] = VersionedKV()
        self.snaps: list[dict[str, int]] = [{}]
        self.hist: dict[str, list[tuple[int, int | None]]] = {}
        self.floor = 0

    def _write(self, key: str, value: int | None, got: int) -> None:
        snap = {k: v for k, v in self.snaps[-1].items() if k != key}
        self.snaps.append(snap if value is None else {**snap, key: value})
        self.hist.setdefault(key, []).append((len(self.snaps) - 1, value))
        assert got == len(self.snaps) - 1, f"a write returned {got}, expected {len(self.snaps) - 1}"

    @rule(key=st.sampled_from(_KEYS), value=st.integers(0, 3))
    def put(self, key: str, value: int) -> None:
        self._write(key, value, self.kv.put(key, value))

    @rule(key=st.sampled_from(_KEYS))
    def delete(self, key: str) -> None:
        if key in self.snaps[-1]:
            self._write(key, None, self.kv.delete(key))
        else:
            with pytest.raises(KeyError):
                self.kv.delete(key)

    @precondition(lambda self: len(self.snaps) > 1)
    @rule(pick=st.integers(0, 1000))
    def compact(self, pick: int) -> None:
        c = pick % len(self.snaps)
        self.kv.compact(c)
        if c <= self.floor:
            return
        self.floor = c
        for key, entries in list(self.hist.items()):
            old = [i for i, (v, _) in enumerate(entries) if v <= c]
            kept = entries[old[-1] :] if old else entries
            self.hist[key] = kept
            if len(kept) == 1 and kept[0][1] is None:
                del self.hist[key]

    @rule(key=st.sampled_from((*_KEYS, "z")), pick=st.integers(0, 1000))
    def get(self, key: str, pick: int) -> None:
        v = pick % len(self.snaps)
        want = "CompactedError" if v < self.floor else self.snaps[v].get(key, "KeyError")
        got = _read(self.kv, key, v)
        assert got == want, f"get({key!r}, {v}) gave {got!r}, expected {want!r}"

    @invariant()
    def reads_and_history_match(self) -> None:
        assert self.kv.version == len(self.snaps) - 1, f"version is {self.kv.version}"
        v = len(self.snaps) - 1 - (len(self.snaps) - 1 - self.floor) // 2
        assert self.kv.snapshot(v) == self.snaps[v], f"snapshot({v}) is {self.kv.snapshot(v)}"
        got = {key: self.kv.history(key) for key in _KEYS}
        want = {key: self.hist.get(key, []) for key in _KEYS}
        assert got == want, f"histories are {got}, expected {want}"


@pytest.mark.points(3)
def test_any_sequence_of_operations_matches_the_model() -> None:
    """Any sequence of puts, deletes, compactions and reads matches a model of snapshots."""
    stateful.run_state_machine_as_test(
        _Model,
        settings=settings(
            max_examples=30, stateful_step_count=30, report_multiple_bugs=False, phases=_PHASES
        ),
    )


def _best_of(repeats: int, *runs: Callable[[], object]) -> list[float]:
    """The least CPU time (this thread's: other processes do not count) of each run over
    `repeats` rounds, interleaved so what noise remains hits them alike."""
    best = [float("inf")] * len(runs)
    enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(repeats):
            for i, run in enumerate(runs):
                start = time.thread_time()
                run()
                best[i] = min(best[i], time.thread_time() - start)
    finally:
        if enabled:
            gc.enable()
    return best


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


@pytest.mark.category("performance")
@pytest.mark.points(3)
@pytest.mark.timeout(60)
def test_get_cost_grows_logarithmically_with_history() -> None:
    """A read in an 8192-write history costs within a small factor of one in 64 writes."""
    t_small, t_big = _best_of(5, _reads(64, 400), _reads(8192, 400))
    ratio = t_big / t_small
    # O(log h): about 1-2x here; a scan over the history: 100x and more.
    assert ratio < 12, (
        f"400 reads took {t_big * 1e3:.2f} ms at an 8192-write history and "
        f"{t_small * 1e3:.2f} ms at 64 writes ({ratio:.1f}x for 128x the history): "
        "a read should cost O(log h), not O(h)"
    )


@pytest.mark.category("performance")
@pytest.mark.points(2)
@pytest.mark.timeout(60)
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

    t_small, t_big = _best_of(7, put_fresh, put_big)
    ratio = t_big / t_small
    # Amortized O(1): about 1x; copying the history or the snapshot per put: 50x and more.
    assert ratio < 8, (
        f"500 puts took {t_big * 1e3:.2f} ms into a store of 20000 writes and "
        f"{t_small * 1e3:.2f} ms into a new store ({ratio:.1f}x): a put should cost O(1)"
    )
