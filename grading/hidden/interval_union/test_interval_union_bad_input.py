"""Hidden checks for interval_union: bad intervals, bad at_least, items that are not pairs."""

from __future__ import annotations

import numbers
import re
from collections.abc import Callable, Iterator
from decimal import Decimal
from functools import partial
from typing import Any

import pytest
from interval_union import all_busy, coverage, merge
from interval_union_helpers import INF, NAN, ONE, Busy, expect, names, raises

pytestmark = pytest.mark.category("bad_input")


@pytest.mark.points(2)
@pytest.mark.parametrize("name", sorted(ONE))
def test_a_bad_interval_raises_value_error_naming_it(name: str) -> None:
    """start > end, a NaN or an infinite bound raises ValueError naming the interval (and GPU)."""
    expect(ValueError, name, (17.5, 4.25), "17.5", "4.25")
    for bad_interval, word in [((NAN, 3.75), "nan"), ((3.75, NAN), "nan"),
                               ((-INF, 3.75), "inf"), ((3.75, INF), "inf")]:
        expect(ValueError, name, bad_interval, word, "3.75")


def test_a_bad_interval_alone_raises_too() -> None:
    """A bad interval raises ValueError when it is the only one, too (no one-interval shortcut
    skips the checks), in every function."""
    for name in sorted(ONE):
        for bad_interval in [(17.5, 4.25), (NAN, 3.75), (3.75, INF), (5, 3)]:
            expect(ValueError, name, bad_interval, alone=True)


@pytest.mark.parametrize("name", sorted(ONE))
def test_every_nan_is_a_bad_bound(name: str) -> None:
    """Every NaN is a bad bound, not only math.nan: float("nan"), inf - inf, -nan."""
    nans = {'float("nan")': float("nan"), "inf - inf": INF - INF, "-nan": -float("nan"),
            'float("-nan")': float("-nan")}
    for shown, nan in nans.items():
        for bad_interval in [(nan, 3.75), (3.75, nan), (nan, nan)]:
            try:
                expect(ValueError, name, bad_interval)
            except pytest.fail.Exception as exc:  # say which NaN, as repr shows them all alike
                pytest.fail(f"{exc} (the NaN made by {shown})")


_MERGE_FIRST = ["merge", "busy_time", "coverage", "all_busy"]


class _Float(float):
    """A float subclass, as NumPy's float64 is one."""


def test_a_nan_or_inf_of_a_float_subclass_is_a_bad_bound() -> None:
    """A NaN or infinite bound of a float subclass (NumPy's float64 is one) raises ValueError,
    or TypeError for refusing the type, in every function: it is never accepted."""
    nan, inf = _Float("nan"), _Float("inf")
    for name in _MERGE_FIRST:  # a candidate's sweep may loop forever on a NaN
        for bad_interval in [(nan, 3.75), (3.75, nan), (0.0, inf), (-inf, 3.75), (inf, inf),
                             (nan, nan), (0, inf)]:
            try:
                expect((ValueError, TypeError), name, bad_interval)
            except pytest.fail.Exception as exc:  # repr shows a subclass as a plain float
                pytest.fail(f"{exc} (its bounds are of a float subclass)")


class _Float32Like:
    """A stand-in for NumPy's float32: a number registered as numbers.Real that is not a float
    subclass, comparing and subtracting like the float it holds."""

    def __init__(self, value: float) -> None:
        self.value = float(value)

    def __float__(self) -> float:
        return self.value

    def __repr__(self) -> str:
        return f"float32({self.value!r})"

    def __hash__(self) -> int:
        return hash(self.value)

    def __eq__(self, other: object) -> bool:
        return bool(self.value == _plain(other))

    def __lt__(self, other: object) -> bool:
        return bool(self.value < _plain(other))

    def __le__(self, other: object) -> bool:
        return bool(self.value <= _plain(other))

    def __gt__(self, other: object) -> bool:
        return bool(self.value > _plain(other))

    def __ge__(self, other: object) -> bool:
        return bool(self.value >= _plain(other))

    def __sub__(self, other: object) -> float:
        return float(self.value - _plain(other))

    def __rsub__(self, other: object) -> float:
        return float(_plain(other) - self.value)

    def __add__(self, other: object) -> float:
        return float(self.value + _plain(other))

    __radd__ = __add__

    def __neg__(self) -> _Float32Like:
        return _Float32Like(-self.value)


def _plain(other: object) -> Any:
    return other.value if isinstance(other, _Float32Like) else other


numbers.Real.register(_Float32Like)  # as NumPy registers its float types


def test_a_nan_or_inf_of_any_number_type_is_never_accepted() -> None:
    """A NaN or infinite bound of any number type (NumPy's float32, a Decimal) raises
    ValueError, or TypeError for refusing the type, in every function: it is never accepted."""
    nan, inf = _Float32Like(NAN), _Float32Like(INF)
    odd: list[tuple[Any, Any]] = [
        (nan, 3.75), (3.75, nan), (0.0, inf), (-inf, 3.75), (inf, inf), (nan, nan), (0, inf),
        (Decimal("NaN"), 3.75), (0, Decimal("Infinity")), (Decimal("-Infinity"), 3.75)]
    for name in _MERGE_FIRST:  # a candidate's sweep may loop forever on a NaN
        for bad_interval in odd:
            try:
                expect((ValueError, TypeError), name, bad_interval)
            except pytest.fail.Exception as exc:
                pytest.fail(f"{exc} (float32 stands for NumPy's float32, not a float subclass)")


def test_a_reversed_interval_of_an_int_and_a_float_raises() -> None:
    """An interval whose int start is above its float end raises ValueError in every function:
    the bounds are compared exactly, as Python compares them, not through a rounded difference."""
    for name in _MERGE_FIRST:
        for bad_interval in [(2**53 + 1, float(2**53)), (2**63 + 1, float(2**63)),
                             (2**1024, 1e308), (10**400, 1.0)]:
            try:
                expect(ValueError, name, bad_interval)
            except pytest.fail.Exception as exc:
                pytest.fail(str(exc)[:400] + (" ..." if len(str(exc)) > 400 else ""))
            except ArithmeticError as err:  # OverflowError: an int beyond the float range
                item = f"({str(bad_interval[0])[:20]}..., {bad_interval[1]!r})"
                pytest.fail(f"{name} with the reversed interval {item} raised {err!r}, "
                            "expected ValueError")


def test_a_bad_interval_message_shows_its_bounds_as_they_are() -> None:
    """The message of a bad interval shows its bounds exactly (epoch seconds, ints beyond
    float range): not rounded, not converted (merge and busy_time)."""
    for bad_interval in [(1700000000.25, 1700000000.0), (2**63 + 1, 2**63), (10**400 + 1, 10**400),
                         (1e-9, 5e-10)]:
        shown = [repr(b) for b in bad_interval]
        for name in ("merge", "busy_time"):  # the GPU in a message: another check
            try:
                expect(ValueError, name, bad_interval, *shown)
            except pytest.fail.Exception as exc:
                pytest.fail(str(exc)[:400] + (" ..." if len(str(exc)) > 400 else ""))


def _raises_naming(call: Callable[[], object], shown: str, gpu: str) -> None:
    """`call()` raises ValueError, its message naming `gpu`."""
    try:
        got = call()
    except ValueError as err:
        # The failure message must show the call, which pytest.raises cannot.
        assert re.search(names(gpu), str(err)), (  # noqa: PT017
            f"{shown} raised {err!r}: the message should name the GPU {gpu!r}"
        )
        return
    except Exception as err:  # IndexError, KeyError...: shown as what the call raised
        pytest.fail(f"{shown} raised {err!r}, expected ValueError naming the GPU {gpu!r}")
    pytest.fail(f"{shown} returned {got!r}, expected ValueError naming the GPU {gpu!r}")


def test_a_bad_interval_message_names_its_own_gpu_wherever_it_is() -> None:
    """The message of a bad interval in coverage and all_busy names the GPU it belongs to,
    whether that GPU comes first, in the middle or last in the mapping."""
    gpus = ["node-1/gpu-a", "node-1/gpu-b", "node-2/gpu-c"]
    for bad_gpu in gpus:
        busy: dict[str, list[Any]] = {gpu: [(0, 4), (2, 6)] for gpu in gpus}
        busy[bad_gpu] = [(1, 3), (9.5, 7.25)]
        for k in (1, 2, 4):
            _raises_naming(partial(coverage, busy, k), f"coverage({busy}, {k})", bad_gpu)
        _raises_naming(partial(all_busy, busy), f"all_busy({busy})", bad_gpu)


def test_a_gpu_name_with_braces_or_percent_signs_is_named_as_it_is() -> None:
    """A GPU name holding braces or percent signs ("node{3}/gpu0", "job-{rank}", "50%s") is
    named in the message of its bad interval like any other: the ValueError is still raised."""
    for gpu in ["node{3}/gpu0", "job-{rank}", "{}", "{0}", "50%s", "gpu%d-{x!r}"]:
        busy: dict[str, list[Any]] = {"gpu-ok": [(0, 4)], gpu: [(0, 1), (2, 1)]}
        _raises_naming(partial(coverage, busy, 1), f"coverage({busy}, 1)", gpu)
        _raises_naming(partial(all_busy, busy), f"all_busy({busy})", gpu)
        inf: dict[str, list[Any]] = {gpu: [(0, INF)]}
        _raises_naming(partial(coverage, inf, 1), f"coverage({inf}, 1)", gpu)


@pytest.mark.points(2)
def test_an_empty_interval_with_bad_bounds_still_raises() -> None:
    """Validation comes before dropping empty intervals: (inf, inf) and (nan, nan) raise."""
    for name in ONE:
        for bad_interval in [(INF, INF), (-INF, -INF), (NAN, NAN)]:
            expect(ValueError, name, bad_interval)


def test_at_least_below_one_raises_value_error() -> None:
    """coverage with at_least < 1 raises ValueError, with GPUs or without."""
    cases: list[tuple[Busy, int]] = [({"a": [(0, 1)]}, 0), ({"a": [(0, 1)]}, -2), ({}, 0),
                                     ({}, -1), ({"a": []}, 0)]
    for busy, at_least in cases:
        raises(ValueError, partial(coverage, busy, at_least), f"coverage({busy}, {at_least})")


def test_at_least_that_is_not_an_int_raises_type_error() -> None:
    """coverage with an at_least that is not an int (2.0, 2.5, "2", None) raises TypeError."""
    busy: Busy = {"a": [(0, 4)], "b": [(2, 6)], "c": [(3, 9)]}
    odd: list[Any] = [2.0, 2.5, "2", None]
    for at_least in odd:
        raises(TypeError, partial(coverage, busy, at_least), f"coverage({busy}, {at_least!r})")
    # A bool is an int in Python: the statement leaves it open (TypeError, or True as 1).
    try:
        got = coverage(busy, True)
    except TypeError:
        return
    assert got == [(0, 9)], f"coverage({busy}, True) returned {got}: expected TypeError or [(0, 9)]"


def test_at_least_that_is_not_an_int_raises_type_error_above_the_gpu_count() -> None:
    """coverage with an at_least that is not an int raises TypeError even when it is above
    the GPU count, or there are no GPUs (the answer [] is no excuse)."""
    cases: list[tuple[Busy, Any]] = [({"a": [(0, 1)]}, 2.0), ({"a": [(0, 1)]}, 7.5),
                                     ({"a": [], "b": [(0, 4)]}, 3.0), ({}, 1.0), ({}, 2.5)]
    for busy, at_least in cases:
        raises(TypeError, partial(coverage, busy, at_least), f"coverage({busy}, {at_least!r})")


def test_bad_input_raises_even_when_the_answer_is_empty() -> None:
    """Bad input raises even where the answer would be [] (at_least above the GPU count)."""
    raises(ValueError, lambda: coverage({"a": [(0, 1)], "b": [(3, 2)]}, 3),
           "coverage({'a': [(0, 1)], 'b': [(3, 2)]}, 3)")
    raises(ValueError, lambda: all_busy({"idle": [], "b": [(0, 1), (1, INF)]}),
           "all_busy({'idle': [], 'b': [(0, 1), (1, inf)]})")
    raises(ValueError, lambda: all_busy({"b": [(NAN, NAN)], "idle": []}),
           "all_busy({'b': [(nan, nan)], 'idle': []})")
    not_numbers: list[Any] = [(0, "1")]
    raises(TypeError, lambda: coverage({"a": not_numbers}, 2), "coverage({'a': [(0, '1')]}, 2)")
    # Several errors at once: any one of them may be reported.
    no_end: list[Any] = [(0, None)]
    raises((TypeError, ValueError), lambda: coverage({"a": no_end}, 0),
           "coverage({'a': [(0, None)]}, 0)")
    raises(ValueError, lambda: merge([(2, 1), (0, NAN)]), "merge([(2, 1), (0, nan)])")


def test_an_item_that_is_not_a_pair_of_numbers_raises() -> None:
    """An item that is not a (start, end) pair of numbers raises TypeError (or ValueError)."""
    for name in ONE:
        for item in [(1, 2, 3), 5, None, ("0", "1"), (None, 2)]:
            expect((TypeError, ValueError), name, item, alone=True)


def test_a_gpu_name_of_any_characters_is_named_as_its_str_or_repr() -> None:
    """A GPU name holding non-ASCII characters ("gpu-ü", "节点-3/卡0") is named in the message
    of its bad interval as its str or its repr, not escaped to ASCII."""
    for gpu in ["gpu-ü", "节点-3/卡0", "nœud-2/gpu-é"]:
        busy: dict[str, list[Any]] = {"gpu-ok": [(0, 4)], gpu: [(0, 1), (2, 1)]}
        _raises_naming(partial(coverage, busy, 1), f"coverage({busy}, 1)", gpu)
        _raises_naming(partial(all_busy, busy), f"all_busy({busy})", gpu)


def _calls_coverage_then_yields(bad: tuple[Any, Any]) -> Iterator[Any]:
    """(0, 1), then a coverage call of another job's GPU "gpu-z", then `bad`."""
    yield (0, 1)
    coverage({"gpu-z": [(0, 1)], "gpu-y": [(0.5, 2)]}, 1)
    yield bad


def _nested_coverage(bad: tuple[Any, Any], k: int) -> object:
    return coverage({"gpu-a": _calls_coverage_then_yields(bad), "gpu-b": [(0, 9)]}, k)


def _nested_all_busy(bad: tuple[Any, Any]) -> object:
    return all_busy({"gpu-b": [(0, 9)], "gpu-a": _calls_coverage_then_yields(bad)})


def test_a_bad_interval_read_after_a_nested_call_names_its_own_gpu() -> None:
    """A bad interval that an input generator yields after calling coverage itself is still
    named with the GPU it belongs to, not the nested call's GPU (nor none)."""
    for bad in [(5, 2), (0, INF)]:
        gen = f"generator yielding (0, 1), calling coverage, then yielding {bad}"
        for k in (1, 2):
            _raises_naming(partial(_nested_coverage, bad, k),
                           f"coverage({{'gpu-a': {gen}, 'gpu-b': [(0, 9)]}}, {k})", "gpu-a")
        _raises_naming(partial(_nested_all_busy, bad),
                       f"all_busy({{'gpu-b': [(0, 9)], 'gpu-a': {gen}}})", "gpu-a")


def test_a_signalling_decimal_nan_is_refused_like_any_nan() -> None:
    """A signalling Decimal NaN (Decimal("sNaN")) as a bound raises ValueError, or TypeError for
    refusing Decimal, in every function: never decimal.InvalidOperation from comparing it."""
    odd: list[tuple[Any, Any]] = [(Decimal("sNaN"), 1), (0, Decimal("sNaN")),
                                  (Decimal("sNaN"), Decimal("sNaN")), (Decimal("-sNaN"), 3.75)]
    for name in _MERGE_FIRST:
        for bad_interval in odd:
            try:
                expect((ValueError, TypeError), name, bad_interval)
            except ArithmeticError as err:  # decimal.InvalidOperation
                pytest.fail(f"{name} with the interval {bad_interval!r} raised {err!r}, expected "
                            "ValueError (a NaN bound) or TypeError (Decimal refused)")
