"""Hidden checks for versioned_kv: which values, keys and versions count as such (rules 5, 6 and
the Errors section): values compared by identity with None, subclasses of int and str, any str
as a key, and the error classes."""

from __future__ import annotations

import enum
import os
from typing import Any

import pytest
from versioned_kv import CompactedError, VersionedKV
from versioned_kv_helpers import call, read, store


class _EqualsAnything:
    """A value equal to everything, None included (as `unittest.mock.ANY` is)."""

    def __eq__(self, other: object) -> bool:
        return True

    def __ne__(self, other: object) -> bool:
        return False

    __hash__ = None  # type: ignore[assignment]  # unhashable, as equal-to-all values are

    def __repr__(self) -> str:
        return "<equal to anything>"


class _NoTruth:
    """A value whose comparison gives something with no truth value (as a numpy array's does)."""

    def __eq__(self, other: object) -> Any:
        return self

    def __ne__(self, other: object) -> Any:
        return self

    __hash__ = None  # type: ignore[assignment]

    def __bool__(self) -> bool:
        raise ValueError("the truth value of this comparison is ambiguous")

    def __repr__(self) -> str:
        return "<array-like>"


def _odd(kind: str) -> object:
    return _EqualsAnything() if kind == "equal-to-anything" else _NoTruth()


@pytest.mark.category("edge_cases")
@pytest.mark.parametrize("kind", ["equal-to-anything", "array-like"])
def test_a_value_that_compares_oddly_is_read_like_any_other(kind: str) -> None:
    """A value equal to everything (mock.ANY) or with an ambiguous == (a numpy array) is read,
    listed and snapshotted like any other: only None marks a delete."""
    value = _odd(kind)
    kv: VersionedKV[object] = VersionedKV()
    call(kv, "put", "a", value)
    call(kv, "put", "b", "other")
    got = [read(kv, "a"), read(kv, "a", 1)]
    assert got[0] is value and got[1] is value, \
        f"after put('a', {value!r}), get('a') and get('a', 1) gave {got}, expected the value"
    shot = call(kv, "snapshot", 1)
    assert list(shot) == ["a"] and shot["a"] is value, f"snapshot(1) gave {shot}"
    hist = call(kv, "history", "a")
    assert len(hist) == 1 and hist[0][0] == 1 and hist[0][1] is value, f"history('a'): {hist}"


@pytest.mark.category("edge_cases")
@pytest.mark.parametrize("kind", ["equal-to-anything", "array-like"])
def test_a_key_holding_a_value_that_compares_oddly_can_be_deleted(kind: str) -> None:
    """delete of a key whose value equals everything (mock.ANY) or has an ambiguous == (a numpy
    array) writes its tombstone: the key is live, whatever its value compares equal to."""
    value = _odd(kind)
    kv: VersionedKV[object] = VersionedKV()
    call(kv, "put", "a", value)
    assert call(kv, "delete", "a") == 2, f"delete('a') of a live key holding {value!r} failed"
    hist = call(kv, "history", "a")
    assert [v for v, _ in hist] == [1, 2] and hist[1][1] is None, \
        f"after put('a', {value!r}) and delete('a'), history('a') is {hist}"
    assert read(kv, "a") == "KeyError", f"after the delete, get('a') gave {read(kv, 'a')!r}"


@pytest.mark.category("edge_cases")
@pytest.mark.parametrize("kind", ["equal-to-anything", "array-like"])
def test_a_value_that_compares_oddly_survives_compaction(kind: str) -> None:
    """Compaction keeps a value equal to everything (mock.ANY) or with an ambiguous == (a numpy
    array) as the value it is: only a delete left alone drops a key."""
    value = _odd(kind)
    kv: VersionedKV[object] = VersionedKV()
    call(kv, "put", "a", value)
    call(kv, "put", "b", "other")
    call(kv, "compact", 2)
    got = read(kv, "a")
    assert got is value, f"after put('a', {value!r}), put('b', ...), compact(2): get('a') " \
        f"gave {got!r}, expected the value: it is no delete, whatever it compares equal to"
    hist = call(kv, "history", "a")
    assert len(hist) == 1 and hist[0][0] == 1 and hist[0][1] is value, \
        f"after compact(2), history('a') is {hist}, expected [(1, {value!r})]"


class _Rev(enum.IntEnum):
    FIRST = 1
    SECOND = 2


@pytest.mark.category("edge_cases")
def test_an_int_subclass_is_a_version() -> None:
    """An int subclass (an IntEnum member) is a version in get, snapshot and compact; only bool
    is refused."""
    kv = store(("a", "x"), ("a", "y"), ("b", "z"))
    got = (read(kv, "a", _Rev.FIRST), call(kv, "snapshot", _Rev.SECOND))
    assert got == ("x", {"a": "y"}), \
        f"get('a', Rev.FIRST) and snapshot(Rev.SECOND) gave {got}, expected ('x', {{'a': 'y'}})"
    call(kv, "compact", _Rev.SECOND)
    assert read(kv, "a", 1) == "CompactedError" and read(kv, "a", 2) == "y", \
        f"after compact(Rev.SECOND): get('a', 1) gave {read(kv, 'a', 1)!r}, get('a', 2) " \
        f"{read(kv, 'a', 2)!r}"


class _NodeName(str):
    """A typed key, as `class NodeName(str)` or a StrEnum member is."""


@pytest.mark.category("edge_cases")
def test_a_str_subclass_is_a_key() -> None:
    """A key of a str subclass (a typed NodeName, a StrEnum member) is a str: put accepts it
    and it reads like the equal plain str."""
    kv: VersionedKV[str] = VersionedKV()
    assert call(kv, "put", _NodeName("node-1"), "healthy") == 1
    got = (read(kv, "node-1"), read(kv, _NodeName("node-1")), call(kv, "history", "node-1"))
    assert got == ("healthy", "healthy", [(1, "healthy")]), \
        f"after put(NodeName('node-1'), 'healthy'): get('node-1'), get(NodeName('node-1')) " \
        f"and history('node-1') gave {got}"


class _Node(str, enum.Enum):  # noqa: UP042  # the point: not a StrEnum, whose str() is its value
    """A (str, Enum) member: a str equal to its value, whose str() is "_Node.A", not its value."""

    A = "node-a"


@pytest.mark.category("edge_cases")
def test_a_str_enum_key_is_the_str_it_equals() -> None:
    """A key that is a (str, Enum) member is the str it equals: put(Node.A, ...) is read back
    by get("node-a"), not stored under str(Node.A) ("Node.A")."""
    kv: VersionedKV[str] = VersionedKV()
    assert call(kv, "put", _Node.A, "ready") == 1
    got = (read(kv, "node-a"), read(kv, _Node.A), call(kv, "snapshot"),
           call(kv, "history", "node-a"))
    want = ("ready", "ready", {"node-a": "ready"}, [(1, "ready")])
    assert got == want, \
        f"after put(Node.A, 'ready') with Node.A == 'node-a': get('node-a'), get(Node.A), " \
        f"snapshot() and history('node-a') gave {got}, expected {want}: a key is the str it " \
        "equals, with no conversion (str() of a (str, Enum) member is its name, not its value)"


_COMPOSED, _DECOMPOSED = "caf\u00e9", "cafe\u0301"  # "café" in two Unicode forms: two keys


@pytest.mark.category("edge_cases")
def test_keys_that_differ_only_in_unicode_normalization_are_two_keys() -> None:
    """Two str keys are one key only when they are equal: "café" composed (NFC) and decomposed
    (NFD) are two keys, each read back as written (no normalization)."""
    kv: VersionedKV[int] = VersionedKV()
    call(kv, "put", _DECOMPOSED, 1)
    call(kv, "put", _COMPOSED, 2)
    got = (read(kv, _DECOMPOSED), read(kv, _COMPOSED), call(kv, "snapshot"),
           call(kv, "history", _DECOMPOSED))
    want = (1, 2, {_DECOMPOSED: 1, _COMPOSED: 2}, [(1, 1)])
    assert got == want, \
        f"after put({_DECOMPOSED!r}, 1), put({_COMPOSED!r}, 2): get of each, snapshot() and " \
        f"history({_DECOMPOSED!r}) gave {got}, expected {want}: keys are compared as the str " \
        "they are, with no Unicode normalization"


_ODD_KEYS = ["ключ", "節點-7", "🙂", "a\x00b", "\udcff", os.fsdecode(b"node-\xff"), " ", "\n"]


@pytest.mark.category("edge_cases")
def test_any_str_is_a_key() -> None:
    """Any str is a key: non-ASCII text, emoji, NUL, whitespace, and a lone surrogate (a file
    name decoded by os.fsdecode)."""
    kv: VersionedKV[int] = VersionedKV()
    for k, key in enumerate(_ODD_KEYS):
        call(kv, "put", key, k)
    got = {key: read(kv, key) for key in _ODD_KEYS}
    assert got == {key: k for k, key in enumerate(_ODD_KEYS)}, f"reads of each key: {got}"
    assert call(kv, "snapshot") == got, f"snapshot() gave {call(kv, 'snapshot')}"


@pytest.mark.category("bad_input")
def test_a_compacted_read_is_not_a_key_error() -> None:
    """A read below the compaction point raises a CompactedError that `except KeyError` does
    not catch: a client tells "did not exist" from "no longer known"."""
    assert issubclass(CompactedError, LookupError), "CompactedError must be a LookupError"
    kv = store(("a", "x"), ("a", "z"))
    call(kv, "compact", 2)
    for method, args in [("get", ("a", 1)), ("snapshot", (1,)), ("get", ("never", 1))]:
        shown = f"{method}({', '.join(map(repr, args))})"
        try:
            getattr(kv, method)(*args)
        except KeyError as exc:
            raise AssertionError(f"after compact(2), {shown} raised {exc!r}, which "
                                 "`except KeyError` catches: CompactedError is not a "
                                 "KeyError") from exc
        except CompactedError:
            continue
        except Exception as exc:
            raise AssertionError(f"after compact(2), {shown} raised {exc!r}, expected "
                                 "CompactedError") from exc
        raise AssertionError(f"after compact(2), {shown} returned, expected CompactedError")


@pytest.mark.category("bad_input")
def test_a_compacted_read_is_not_a_value_error() -> None:
    """A read below the compaction point raises a CompactedError that `except ValueError` does
    not catch: a client tells "no longer known" from "a version out of range"."""
    kv = store(("a", "x"), ("a", "z"))
    call(kv, "compact", 2)
    for method, args in [("get", ("a", 1)), ("snapshot", (1,))]:
        shown = f"{method}({', '.join(map(repr, args))})"
        try:
            getattr(kv, method)(*args)
        except ValueError as exc:
            raise AssertionError(f"after compact(2), {shown} raised {exc!r}, which "
                                 "`except ValueError` catches: CompactedError is a LookupError, "
                                 "not a ValueError (that is for a version out of range)") from exc
        except CompactedError:
            continue
        except Exception as exc:
            raise AssertionError(f"after compact(2), {shown} raised {exc!r}, expected "
                                 "CompactedError") from exc
        raise AssertionError(f"after compact(2), {shown} returned, expected CompactedError")


@pytest.mark.category("bad_input")
def test_compact_refuses_none() -> None:
    """compact(None) raises TypeError and compacts nothing (None is not a version, not "the
    latest")."""
    kv = store(("a", "x"), ("a", "y"))
    try:
        kv.compact(None)  # type: ignore[arg-type]  # the point of the check
    except TypeError:
        pass
    except Exception as exc:
        raise AssertionError(f"compact(None) raised {exc!r}, expected TypeError") from exc
    else:
        raise AssertionError("compact(None) returned, expected TypeError")
    got = (call(kv, "history", "a"), read(kv, "a", 1))
    assert got == ([(1, "x"), (2, "y")], "x"), \
        f"after the refused compact(None), history('a') and get('a', 1) gave {got}, expected " \
        f"([(1, 'x'), (2, 'y')], 'x'): a refused call changes nothing"
