"""Hidden checks for versioned_kv: one global counter, reads at a version, deletes, history and
snapshots (rules 1-3, 6-8)."""

from __future__ import annotations

import pytest
from versioned_kv import VersionedKV
from versioned_kv_helpers import call, read, store

# --- rule 1: one global counter ------------------------------------------------------------


@pytest.mark.points(2)
def test_versions_are_one_global_counter() -> None:
    """Puts and deletes on different keys share one version counter: 1, 2, 3, ..."""
    kv: VersionedKV[str] = VersionedKV()
    writes = [("put", "a", "x"), ("put", "b", "y"), ("put", "a", "z"), ("delete", "a"),
              ("put", "c", "w")]
    got = [call(kv, method, *args) for method, *args in writes]
    want = [1, 2, 3, 4, 5]
    assert got == want, f"put a, put b, put a, delete a, put c returned {got}, expected {want}"
    assert kv.version == 5, f"version after five writes is {kv.version}, expected 5"
    assert read(kv, "b", 2) == "y", f"get('b', 2) returned {read(kv, 'b', 2)!r}, expected 'y'"


@pytest.mark.category("edge_cases")
def test_a_new_store_is_empty_at_version_zero() -> None:
    """A new store is at version 0, reads nothing and has no history."""
    kv: VersionedKV[str] = VersionedKV()
    assert kv.version == 0, f"a new store has version {kv.version}, expected 0"
    got = [call(kv, "snapshot"), call(kv, "snapshot", 0), read(kv, "a"), read(kv, "a", 0)]
    want = [{}, {}, "KeyError", "KeyError"]
    assert got == want, f"snapshot(), snapshot(0), get('a'), get('a', 0) gave {got}, not {want}"
    assert call(kv, "history", "a") == [], f"history('a') of a new store is {kv.history('a')}"


# --- rules 2-3: the latest write at or below v ---------------------------------------------


@pytest.mark.points(2)
def test_read_at_the_exact_write_version() -> None:
    """A read at exactly the version of a write sees that write."""
    kv = store(("a", "x"), ("b", "y"), ("a", "z"), ("a", "q"))
    got = [read(kv, "a", v) for v in (1, 3, 4)] + [read(kv, "b", 2)]
    assert got == ["x", "z", "q", "y"], (
        f"get('a', 1), get('a', 3), get('a', 4), get('b', 2) returned {got}, "
        "expected ['x', 'z', 'q', 'y']: each version is exactly a write"
    )


@pytest.mark.points(2)
def test_read_between_writes_sees_the_earlier_write() -> None:
    """A read between two writes to a key sees the earlier one."""
    kv = store(("a", "x"), ("b", "1"), ("b", "2"), ("a", "z"), ("b", "3"))
    got = [read(kv, "a", v) for v in (2, 3, 5)]
    assert got == ["x", "x", "z"], f"get('a', 2 / 3 / 5) returned {got}, expected x, x, z"


@pytest.mark.points(2)
def test_version_of_another_key_reads_as_the_one_before() -> None:
    """At a version where another key was written, a key reads as at the version before."""
    kv = store(("a", "x"), ("b", "y"), ("c", "w"), ("a", None), ("b", "v"))
    for key in ("a", "b"):
        for v in range(2, 6):
            got, before = read(kv, key, v), read(kv, key, v - 1)
            if (key == "a" and v == 4) or (key == "b" and v in (2, 5)):
                continue  # `key` itself was written at v
            assert got == before, f"get({key!r}, {v}) gave {got!r} but at {v - 1}: {before!r}"


@pytest.mark.points(2)
def test_deleted_key_raises_key_error() -> None:
    """After a delete, reads at that version and later raise KeyError."""
    kv = store(("a", "x"), ("a", "y"), ("a", None), ("b", "z"))
    got = [read(kv, "a", v) for v in (3, 4, None)]
    assert got == ["KeyError"] * 3, (
        f"get('a', 3), get('a', 4), get('a') after a delete at 3 gave {got}, not KeyError"
    )
    assert read(kv, "a", 2) == "y", f"get('a', 2) gave {read(kv, 'a', 2)!r}: the delete at 3 " \
                                    "must not change the read at 2, 'y'"


@pytest.mark.points(2)
def test_read_before_first_write_raises_key_error() -> None:
    """A read below a key's first write raises KeyError."""
    kv = store(("b", "y"), ("c", "w"), ("a", "x"), ("a", "z"))
    got = [read(kv, "a", v) for v in (0, 1, 2)]
    assert got == ["KeyError"] * 3, f"get('a', 0 / 1 / 2) before its first write at 3 gave {got}"


def test_key_written_again_after_delete_is_live() -> None:
    """A key put again after a delete reads its new value."""
    kv = store(("a", "x"), ("a", None), ("a", "y"))
    assert read(kv, "a") == "y", f"get('a') after put/delete/put returned {read(kv, 'a')!r}"
    got = call(kv, "snapshot")
    assert got == {"a": "y"}, f"snapshot() is {got}, expected {{'a': 'y'}}"


def test_get_defaults_to_the_latest_version() -> None:
    """get(k) and snapshot() read at the latest version."""
    kv = store(("a", "x"), ("b", "y"), ("a", "z"))
    assert read(kv, "a") == "z", f"get('a') returned {read(kv, 'a')!r}, expected 'z'"
    got = call(kv, "snapshot")
    assert got == {"a": "z", "b": "y"}, f"snapshot() returned {got}"


# --- rules 6-8: values, keys, snapshots, history -------------------------------------------


@pytest.mark.category("edge_cases")
def test_any_value_but_none_is_stored() -> None:
    """Falsy, unhashable and singleton values (Ellipsis) are stored, read back and listed as
    written: only None marks a delete."""
    kv: VersionedKV[object] = VersionedKV()
    values: list[object] = [0, "", False, [], {"x": [1]}, 0.0, (None,), ...]
    for i, value in enumerate(values):
        call(kv, "put", f"k{i}", value)
    got = [read(kv, f"k{i}") for i in range(len(values))]
    assert got == values, f"get() of the stored values returned {got}, expected {values}"
    got_snapshot = call(kv, "snapshot")
    want = {f"k{i}": v for i, v in enumerate(values)}
    assert got_snapshot == want, f"snapshot() is {got_snapshot}, expected {want}"
    histories = [call(kv, "history", f"k{i}") for i in range(len(values))]
    want_histories = [[(i + 1, v)] for i, v in enumerate(values)]
    assert histories == want_histories, (
        f"history() of the stored values gave {histories}, expected {want_histories}: a value "
        "is listed as itself, never as None"
    )


@pytest.mark.category("edge_cases")
def test_an_empty_key_is_a_key_like_any_other() -> None:
    """The empty string is a key like any other: written, read, deleted and listed."""
    kv = store(("", "x"), ("a", "y"), ("", "z"), ("", None), ("", "w"))
    got = [read(kv, "", v) for v in range(6)]
    want = ["KeyError", "x", "x", "z", "KeyError", "w"]
    assert got == want, f"get('', 0..5) gave {got}, expected {want}"
    history = call(kv, "history", "")
    assert history == [(1, "x"), (3, "z"), (4, None), (5, "w")], f"history('') is {history}"
    assert call(kv, "snapshot", 3) == {"": "z", "a": "y"}, f"snapshot(3) is {kv.snapshot(3)}"


@pytest.mark.category("edge_cases")
def test_snapshot_is_a_new_dict() -> None:
    """Changing the dict snapshot() returned does not change the store."""
    kv = store(("a", "x"))
    call(kv, "snapshot")["b"] = "y"
    call(kv, "snapshot", 1).pop("a")
    got = call(kv, "snapshot")
    assert got == {"a": "x"}, f"after editing a returned dict, snapshot() is {got}"
    assert read(kv, "b") == "KeyError", f"get('b') gave {read(kv, 'b')!r}, expected KeyError"


@pytest.mark.category("edge_cases")
def test_history_is_a_new_list() -> None:
    """Changing the list history() returned does not change the store."""
    kv = store(("a", "x"), ("a", "y"))
    call(kv, "history", "a").clear()
    call(kv, "history", "a").append((3, "z"))
    call(kv, "history", "never").append((1, "q"))
    got = (call(kv, "history", "a"), call(kv, "history", "never"))
    assert got == ([(1, "x"), (2, "y")], []), f"after editing returned lists, history is {got}"
    assert read(kv, "a") == "y", f"get('a') gave {read(kv, 'a')!r} after a history was edited"
    assert read(kv, "never") == "KeyError", "a history list edited by the caller made a key"


def test_history_lists_every_write_with_none_for_deletes() -> None:
    """history(k) is every write to k as (version, value), oldest first, None for a delete."""
    kv = store(("a", "x"), ("b", "y"), ("a", None), ("a", "z"), ("a", "z"))
    got = call(kv, "history", "a")
    want = [(1, "x"), (3, None), (4, "z"), (5, "z")]
    assert got == want, f"history('a') is {got}, expected {want}"
    assert call(kv, "history", "b") == [(2, "y")], f"history('b') is {kv.history('b')}"
    got_never = call(kv, "history", "never")
    assert got_never == [], f"history of an unknown key is {got_never}"
