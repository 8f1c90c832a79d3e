"""Hidden checks for versioned_kv: every documented error, in the stated order, raised before
anything changes, on a plain, an empty and a compacted store (rules 4-6 and the Errors section)."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

import pytest
from versioned_kv import CompactedError, VersionedKV
from versioned_kv_helpers import call, store

pytestmark = pytest.mark.category("bad_input")

_Calls = list[tuple[str, tuple[object, ...]]]

# Per case, calls that must raise the error; a ValueError's message must name the bad version.
# The store is at version 4 (a: x@1, z@3; b: y@2, deleted@4).
_BAD_CALLS: dict[str, tuple[type[Exception], _Calls]] = {
    "value-none": (TypeError, [("put", ("c", None)), ("put", ("a", None))]),
    "key-not-str": (TypeError, [("put", (1, "v")), ("put", (b"a", "v")), ("put", (("a",), "v"))]),
    "delete-not-live": (KeyError, [("delete", ("b",)), ("delete", ("never",))]),
    "version-below-0": (ValueError, [("get", ("a", -1)), ("snapshot", (-1,))]),
    "version-above-latest": (ValueError, [("get", ("a", 5)), ("snapshot", (5,))]),
    "version-before-key": (ValueError, [("get", ("never", 5)), ("get", ("never", -1))]),
    "compact-out-of-range": (ValueError, [("compact", (-1,)), ("compact", (5,))]),
    "version-not-int": (
        TypeError,
        [("get", ("a", 1.5)), ("get", ("a", "1")), ("get", ("a", 2.0)), ("snapshot", (1.5,)),
         ("compact", ("1",)), ("compact", (2.0,)), ("get", ("a", 99.0)), ("snapshot", (-0.5,))],
    ),
    "version-bool": (
        TypeError,
        [("get", ("a", True)), ("get", ("a", False)), ("snapshot", (True,)),
         ("compact", (True,))],
    ),
}

# On a new store (version 0): nothing to read must not skip the checks.
_EMPTY_CALLS: list[tuple[type[Exception], _Calls]] = [
    (ValueError, [("get", ("a", 1)), ("snapshot", (1,)), ("compact", (1,)), ("get", ("a", -1)),
                  ("snapshot", (-1,)), ("compact", (-1,))]),
    (TypeError, [("get", ("a", 0.0)), ("snapshot", ("0",)), ("compact", (0.0,)),
                 ("put", ("a", None)), ("put", (None, "v"))]),
    (KeyError, [("delete", ("a",))]),
]

# After compact(3) of the plain store: the range and type come before compaction.
_COMPACTED_CALLS: list[tuple[type[Exception], _Calls]] = [
    (ValueError, [("get", ("a", -1)), ("snapshot", (-1,)), ("get", ("never", -1)),
                  ("compact", (-1,)), ("compact", (5,))]),
    (TypeError, [("get", ("a", 1.5)), ("snapshot", (2.0,)), ("get", ("never", 1.0))]),
]

# compact's version on a new, a plain and a compacted store (at and below the point too).
_COMPACT_TYPES: _Calls = [("compact", (2.0,)), ("compact", (True,)), ("compact", (1.5,)),
                          ("compact", ("1",)), ("compact", (3.0,)), ("compact", (False,))]


def _state(kv: VersionedKV[Any], floor: int) -> object:
    reads = [kv.snapshot(v) for v in range(floor, kv.version + 1)]
    return kv.version, reads, [kv.history(key) for key in ("a", "b", "never")]


def _check_calls(kv: VersionedKV[Any], floor: int, case: str, error: type[Exception],
                 calls: _Calls) -> None:
    before = _state(kv, floor)
    live = set(kv.snapshot())
    for method, args in calls:
        call = f"{method}({', '.join(map(repr, args))})"
        try:
            got: object = getattr(kv, method)(*args)
        except Exception as exc:
            got = exc
        assert isinstance(got, error), f"{call} gave {got!r}, expected {error.__name__}"
        if error is not KeyError:  # a CompactedError is a LookupError, never a KeyError here
            assert not isinstance(got, CompactedError), f"{call} raised {got!r}"
        named = error is not ValueError or str(args[-1]) in str(got)
        assert named, f"{call} raised {got!r}, whose message does not name {args[-1]}"
    after = _state(kv, floor)
    assert after == before, f"refused calls {case} changed the store: {before} became {after}"
    # A refused put of a new key leaves no trace: the key is still one never written.
    for key in {args[0] for method, args in calls if method == "put"} - live:
        if isinstance(key, str):
            try:
                got = kv.delete(key)
            except Exception as exc:
                got = exc
            assert isinstance(got, KeyError), (
                f"after a refused put({key!r}, ...), delete({key!r}) gave {got!r}: expected "
                "KeyError, as for a key never written"
            )


@pytest.mark.parametrize("case", list(_BAD_CALLS))
def test_a_bad_call_raises_the_documented_error_and_changes_nothing(case: str) -> None:
    """A bad call raises the documented error and changes nothing."""
    kv = store(("a", "x"), ("b", "y"), ("a", "z"), ("b", None))
    _check_calls(kv, 0, case, *_BAD_CALLS[case])
    assert kv.version == 4, f"after refused calls {case}, the version is {kv.version}, not 4"


def test_a_path_is_not_a_key() -> None:
    """put refuses a pathlib path as a key with TypeError (a path is no str: no os.fspath), and
    changes nothing."""
    kv = store(("a", "x"), ("b", "y"), ("a", "z"), ("b", None))
    path = PurePosixPath("/registry/pods/p1")
    _check_calls(kv, 0, "with a path as the key", TypeError, [("put", (path, "v"))])
    got = (kv.version, call(kv, "history", "/registry/pods/p1"))
    assert got == (4, []), (
        f"after the refused put({path!r}, 'v'), version and history('/registry/pods/p1') are "
        f"{got}, expected (4, []): the path must not be stored under its str"
    )


def _assert_named(calls: _Calls, how: str) -> None:
    """Each call on a store at version 1 raises a ValueError whose message holds str(version)."""
    kv = store(("a", "x"))
    for method, args in calls:
        shown = f"{method}({', '.join(map(repr, args))})"
        with pytest.raises(ValueError) as caught:
            getattr(kv, method)(*args)
        assert str(args[-1]) in str(caught.value), (
            f"{shown} raised {caught.value!r}, whose message does not contain {args[-1]} {how}"
        )


def test_a_value_error_names_a_large_version_in_plain_digits() -> None:
    """A ValueError names a bad version of four digits and more as str() writes it: 12345, not
    12,345."""
    _assert_named([("get", ("a", 12345)), ("snapshot", (1000,)), ("compact", (-2048,))],
                  "as plain digits (no thousands separators)")


def test_a_value_error_names_a_very_long_version_in_full() -> None:
    """A ValueError names a bad version of 49 digits in full, not shortened with "..."."""
    _assert_named([("get", ("a", 2**160)), ("snapshot", (-(2**160),)),
                   ("compact", (2**160 + 1,))],
                  "in full (a version Python can print is never shortened, as reprlib does)")


def test_a_new_store_checks_every_argument() -> None:
    """On a new store, with nothing to read, bad versions, values and deletes still raise."""
    for error, calls in _EMPTY_CALLS:
        kv: VersionedKV[str] = VersionedKV()
        _check_calls(kv, 0, "on a new store", error, calls)
        assert kv.version == 0, f"after refused calls on a new store, the version is {kv.version}"


def test_a_compacted_store_checks_the_version_before_compaction() -> None:
    """After a compaction, a version below 0, above the latest or not an int raises ValueError
    or TypeError, not CompactedError."""
    for error, calls in _COMPACTED_CALLS:
        kv = store(("a", "x"), ("b", "y"), ("a", "z"), ("b", None))
        kv.compact(3)
        _check_calls(kv, 3, "after compact(3)", error, calls)
        assert kv.version == 4, f"after refused calls, the version is {kv.version}, not 4"


def test_compact_checks_the_type_of_its_version() -> None:
    """compact refuses a version that is not an int (a whole float, a bool) with TypeError, on a
    new store, a plain one and one compacted already, at or below the point too."""
    empty: VersionedKV[str] = VersionedKV()
    _check_calls(empty, 0, "on a new store", TypeError, _COMPACT_TYPES[3:])
    kv = store(("a", "x"), ("b", "y"), ("a", "z"), ("b", None))
    _check_calls(kv, 0, "on a store at version 4", TypeError, _COMPACT_TYPES)
    kv.compact(3)
    _check_calls(kv, 3, "after compact(3)", TypeError, _COMPACT_TYPES)


def test_a_refused_put_leaves_no_trace() -> None:
    """A put refused for its None value leaves the key as it was: never written stays never
    written (delete raises KeyError, history is []), and a later put starts its history."""
    kv = store(("a", "x"))
    for key in ("new", "a"):
        with pytest.raises(TypeError):
            kv.put(key, None)  # type: ignore[arg-type]
    outcomes: list[object] = []
    for method, args in [("delete", ("new",)), ("history", ("new",)), ("snapshot", ()),
                         ("history", ("a",)), ("get", ("new",))]:
        try:
            outcomes.append(getattr(kv, method)(*args))
        except Exception as exc:
            outcomes.append(type(exc).__name__)
    want: list[object] = ["KeyError", [], {"a": "x"}, [(1, "x")], "KeyError"]
    assert outcomes == want, (
        f"after put('new', None) and put('a', None) were refused, delete('new'), "
        f"history('new'), snapshot(), history('a'), get('new') gave {outcomes}, expected {want}"
    )
    assert kv.put("new", "v") == 2, "the refused puts must not use up a version"
    assert kv.history("new") == [(2, "v")], f"history('new') is {kv.history('new')}"


@pytest.mark.category("edge_cases")
def test_a_key_that_is_not_a_str_is_refused_or_never_written() -> None:
    """get, delete and history with a key that is not a str raise TypeError or treat it as a
    key never written (KeyError, KeyError, []); either way nothing changes."""
    kv = store(("a", "x"), ("b", "y"))
    before = _state(kv, 0)
    outcomes: dict[str, object] = {}
    for key in (1, b"a", ("a",), None, ["a"]):
        for method, args in [("get", (key,)), ("get", (key, 1)), ("delete", (key,)),
                             ("history", (key,))]:
            call = f"{method}({', '.join(map(repr, args))})"
            try:
                got: object = getattr(kv, method)(*args)
            except Exception as exc:
                got = exc
            outcomes[call] = got
            if method == "history":
                ok = got == [] or isinstance(got, TypeError)
            else:
                ok = isinstance(got, TypeError | KeyError) and not isinstance(got, CompactedError)
            assert ok, f"{call} gave {got!r}: expected TypeError, or what a key never written gives"
    assert _state(kv, 0) == before, f"calls with keys not str changed the store: {outcomes}"
