"""Visible tests for versioned_kv: the statement's worked examples and two properties.

Run them with `uv run pytest exercises/versioned_kv` (against the stub they all fail), or
grade a file with `uv run grader.py versioned_kv --submission PATH`.
"""

from __future__ import annotations

import contextlib

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from versioned_kv import CompactedError, VersionedKV

_KEYS = ("a", "b", "c")
# Hypothesis's explain phase costs seconds per failing test and adds little here.
_PHASES = [phase for phase in Phase if phase is not Phase.explain]


def _table_store() -> VersionedKV[str]:
    """The store of worked example 1: five writes, versions 1 to 5."""
    kv: VersionedKV[str] = VersionedKV()
    kv.put("a", "x")  # 1
    kv.put("b", "y")  # 2
    kv.put("a", "z")  # 3
    kv.delete("a")  # 4
    kv.put("b", "w")  # 5
    return kv


@pytest.mark.category("correctness")
def test_every_put_and_delete_advances_one_global_version() -> None:
    """Every put and delete advances one global version, starting at 1."""
    kv: VersionedKV[str] = VersionedKV()
    assert kv.version == 0, f"a new store has version {kv.version}, expected 0"
    got = [kv.put("a", "x"), kv.put("b", "y"), kv.put("a", "z"), kv.delete("a")]
    got.append(kv.put("b", "w"))
    assert got == [1, 2, 3, 4, 5], f"put/put/put/delete/put returned {got}, expected 1..5"
    assert kv.version == 5, f"version after five writes is {kv.version}, expected 5"


@pytest.mark.category("correctness")
def test_get_reads_the_latest_write_at_or_below_the_version() -> None:
    """A read at version v sees the latest write to the key at or below v."""
    kv = _table_store()
    for key, version, want in [("a", 1, "x"), ("a", 3, "z"), ("b", 2, "y"), ("b", 5, "w")]:
        got = kv.get(key, version)
        assert got == want, f"get({key!r}, {version}) returned {got!r}, expected {want!r}"
    assert kv.get("b") == "w", f"get('b') returned {kv.get('b')!r}, expected the latest, 'w'"


@pytest.mark.category("correctness")
def test_a_key_not_yet_written_raises_key_error() -> None:
    """A read below a key's first write raises KeyError."""
    kv = _table_store()
    for key, version in [("a", 0), ("b", 0), ("b", 1)]:
        with pytest.raises(KeyError):
            kv.get(key, version)


@pytest.mark.category("correctness")
def test_a_deleted_key_raises_key_error() -> None:
    """A read at or after a key's delete raises KeyError."""
    kv = _table_store()
    for version in (4, 5):
        with pytest.raises(KeyError):
            kv.get("a", version)


@pytest.mark.category("correctness")
def test_a_version_of_another_key_reads_as_the_one_before() -> None:
    """At a version where another key was written, a key reads as at the version before."""
    kv = _table_store()
    for key, version, want in [("a", 2, "x"), ("b", 3, "y"), ("b", 4, "y")]:
        got = kv.get(key, version)
        assert got == want, f"get({key!r}, {version}) returned {got!r}, expected {want!r}"


@pytest.mark.category("correctness")
def test_snapshot_holds_exactly_the_live_keys() -> None:
    """snapshot(v) holds exactly the keys live at v, with their values."""
    kv = _table_store()
    want = [{}, {"a": "x"}, {"a": "x", "b": "y"}, {"a": "z", "b": "y"}, {"b": "y"}, {"b": "w"}]
    got = [kv.snapshot(v) for v in range(6)]
    assert got == want, f"snapshot(0..5) returned {got}, expected {want}"
    assert kv.snapshot() == {"b": "w"}, "snapshot() must read at the latest version"


@pytest.mark.category("correctness")
def test_compaction_example() -> None:
    """compact(3) keeps reads at 3 and later, and forgets what came before."""
    kv = _table_store()
    kv.compact(3)
    assert kv.get("a", 3) == "z", f"get('a', 3) after compact(3) returned {kv.get('a', 3)!r}"
    with pytest.raises(CompactedError):
        kv.get("a", 2)
    assert kv.history("a") == [(3, "z"), (4, None)], f"history('a') is {kv.history('a')}"
    assert kv.history("b") == [(2, "y"), (5, "w")], f"history('b') is {kv.history('b')}"
    kv.compact(4)
    assert kv.history("a") == [], f"after compact(4) history('a') is {kv.history('a')}, not []"


@pytest.mark.category("bad_input")
def test_errors_example() -> None:
    """Bad deletes, future versions and None values raise the documented errors."""
    kv = _table_store()
    with pytest.raises(KeyError):
        kv.delete("a")
    assert kv.version == 5, f"a refused delete moved the version to {kv.version}, expected 5"
    with pytest.raises(ValueError, match="6"):
        kv.get("b", 6)
    with pytest.raises(TypeError):
        kv.put("c", None)  # type: ignore[arg-type]
    assert kv.version == 5, f"a refused put moved the version to {kv.version}, expected 5"


_OPS = st.lists(
    st.tuples(st.sampled_from(_KEYS), st.one_of(st.none(), st.integers(0, 9))), max_size=30
)


@pytest.mark.category("correctness")
@settings(max_examples=50, report_multiple_bugs=False, phases=_PHASES)
@example(ops=[("a", 1), ("b", 2), ("a", 3), ("a", None), ("b", 4)])  # worked example 1
@given(ops=_OPS)
def test_snapshot_equals_the_reads_that_succeed(ops: list[tuple[str, int | None]]) -> None:
    """At every version, snapshot(v) equals get(k, v) over the keys that do not raise."""
    kv: VersionedKV[int] = VersionedKV()
    live: set[str] = set()
    for key, value in ops:  # (key, None) deletes the key if it is live
        if value is not None:
            kv.put(key, value)
            live.add(key)
        elif key in live:
            kv.delete(key)
            live.discard(key)
    for v in range(kv.version + 1):
        reads: dict[str, int] = {}
        for key in _KEYS:
            with contextlib.suppress(KeyError):
                reads[key] = kv.get(key, v)
        assert kv.snapshot(v) == reads, f"snapshot({v}) is {kv.snapshot(v)}, gets say {reads}"


class _StoreMachine(RuleBasedStateMachine):
    """The store against a model: the list of full snapshots, one per version."""

    def __init__(self) -> None:
        super().__init__()
        self.kv: VersionedKV[int] = VersionedKV()
        self.snapshots: list[dict[str, int]] = [{}]
        self.floor = 0

    @rule(key=st.sampled_from(_KEYS), value=st.integers(0, 9))
    def put(self, key: str, value: int) -> None:
        got = self.kv.put(key, value)
        self.snapshots.append({**self.snapshots[-1], key: value})
        assert got == len(self.snapshots) - 1, f"put({key!r}, {value}) returned {got}"

    @rule(key=st.sampled_from(_KEYS))
    def delete(self, key: str) -> None:
        if key not in self.snapshots[-1]:
            with pytest.raises(KeyError):
                self.kv.delete(key)
            return
        got = self.kv.delete(key)
        self.snapshots.append({k: v for k, v in self.snapshots[-1].items() if k != key})
        assert got == len(self.snapshots) - 1, f"delete({key!r}) returned {got}"

    @rule(key=st.sampled_from(_KEYS), pick=st.integers(0, 1000))
    def get(self, key: str, pick: int) -> None:
        v = pick % len(self.snapshots)
        if v < self.floor:
            with pytest.raises(CompactedError):
                self.kv.get(key, v)
        elif key in self.snapshots[v]:
            got = self.kv.get(key, v)
            want = self.snapshots[v][key]
            assert got == want, f"get({key!r}, {v}) returned {got}, expected {want}"
        else:
            with pytest.raises(KeyError):
                self.kv.get(key, v)

    @rule(pick=st.integers(0, 1000))
    def snapshot(self, pick: int) -> None:
        v = pick % len(self.snapshots)
        if v < self.floor:
            with pytest.raises(CompactedError):
                self.kv.snapshot(v)
        else:
            got, want = self.kv.snapshot(v), self.snapshots[v]
            assert got == want, f"snapshot({v}) returned {got}, expected {want}"

    @precondition(lambda self: len(self.snapshots) > 1)
    @rule(pick=st.integers(0, 1000))
    def compact(self, pick: int) -> None:
        c = pick % len(self.snapshots)
        self.kv.compact(c)
        self.floor = max(self.floor, c)

    @invariant()
    def version_is_the_number_of_writes(self) -> None:
        want = len(self.snapshots) - 1
        assert self.kv.version == want, f"version is {self.kv.version}, expected {want}"


@pytest.mark.category("correctness")
@pytest.mark.points(2)
def test_store_matches_a_model_of_full_snapshots() -> None:
    """Any sequence of puts, deletes, compactions and reads matches a list of full snapshots."""
    run_state_machine_as_test(
        _StoreMachine,
        settings=settings(
            max_examples=40, stateful_step_count=25, report_multiple_bugs=False, phases=_PHASES
        ),
    )
