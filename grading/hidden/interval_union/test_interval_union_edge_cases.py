"""Hidden checks for interval_union: empty inputs, idle GPUs, generators, inputs left alone."""

from __future__ import annotations

import copy
import gc
import weakref
from collections.abc import Callable, Iterable, Iterator
from decimal import Decimal
from fractions import Fraction
from functools import partial
from typing import Any

import pytest
from interval_union import Interval, all_busy, busy_time, coverage, merge
from interval_union_helpers import CALLS, Busy, Once, check_coverage, well_formed

pytestmark = pytest.mark.category("edge_cases")


def test_empty_inputs_give_empty_results() -> None:
    """No intervals give [] and a busy time of 0; no GPUs give [], all_busy({}) included."""
    assert merge([]) == [], f"merge([]) returned {merge([])}"
    assert busy_time([]) == 0, f"busy_time([]) returned {busy_time([])}"
    check_coverage([({}, 1, []), ({"a": []}, 1, [])])
    assert all_busy({}) == [], f"all_busy({{}}) returned {all_busy({})}, expected []"


@pytest.mark.points(2)
def test_empty_intervals_are_ignored() -> None:
    """Empty intervals (start == end) are ignored: they add no time and no span."""
    assert merge([(5, 5)]) == [], f"merge([(5, 5)]) returned {merge([(5, 5)])}, expected []"
    got = merge([(0, 1), (3, 3), (6, 7)])
    assert got == [(0, 1), (6, 7)], f"merge([(0, 1), (3, 3), (6, 7)]) returned {got}"
    assert busy_time([(2.5, 2.5)]) == 0, "busy_time([(2.5, 2.5)]) should be 0"
    check_coverage([({"a": [(3, 3)], "b": [(3, 3), (0, 1)]}, 2, [])])


@pytest.mark.points(2)
def test_a_gpu_listed_with_no_intervals_still_counts() -> None:
    """A GPU listed with no (or only empty) intervals counts, so all_busy is []."""
    idle: list[list[Interval]] = [[], [(2, 2)]]
    for nothing in idle:
        busy: Busy = {"a": [(0, 5)], "b": nothing}
        assert all_busy(busy) == [], f"all_busy({busy}) returned {all_busy(busy)}, expected []"
        check_coverage([(busy, 2, []), (busy, 1, [(0, 5)])])


def test_at_least_above_the_gpu_count_gives_nothing() -> None:
    """coverage with at_least greater than the number of GPUs is []."""
    busy: Busy = {"a": [(0, 5)], "b": [(0, 5)]}
    check_coverage([(busy, 2, [(0, 5)]), (busy, 3, [])])


@pytest.mark.parametrize("name", sorted(CALLS))
def test_generators_are_accepted(name: str) -> None:
    """Inputs may be generators, and give the same answer as lists."""
    got, want = CALLS[name](lambda ivs: (iv for iv in ivs)), CALLS[name](list)
    assert got == want, f"{name} on generators returned {got}; on lists it returned {want}"


@pytest.mark.points(2)
def test_inputs_are_read_once() -> None:
    """Every input iterable is iterated at most once."""
    for name, call in CALLS.items():
        got, want = call(Once), call(list)
        assert got == want, f"{name} on one-shot iterables returned {got}, expected {want}"


def test_inputs_are_not_modified() -> None:
    """The caller's lists and mapping are left as they were."""
    intervals: list[Interval] = [(4, 6), (0, 2), (1, 3), (2, 2)]
    busy: Busy = {"b": [(4, 6), (0, 2), (0, 2)], "a": [(1, 5)]}
    before, busy_before = list(intervals), copy.deepcopy(busy)
    merge(intervals)
    busy_time(intervals)
    coverage(busy, 2)
    all_busy(busy)
    assert intervals == before, f"the input list became {intervals}, was {before}"
    assert busy == busy_before, f"the input mapping became {busy}, was {busy_before}"


def test_results_are_new_lists_never_the_callers_own() -> None:
    """Results are new lists, even when the input is already a union: changing a result leaves
    the input as it was."""
    calls: dict[str, Callable[[list[Interval]], list[Interval]]] = {
        "merge": merge,
        "coverage": lambda ivs: coverage({"a": ivs}, 1),
        "all_busy": lambda ivs: all_busy({"a": ivs}),
    }
    for name, call in calls.items():
        for union in ([(0, 1), (2, 3)], [(0.5, 4.0)]):
            given, before = list(union), list(union)
            got = call(given)
            assert got is not given, f"{name} on {before} returned the caller's own list"
            got.append((9, 10))
            assert given == before, (
                f"appending to the result of {name} on {before} changed the input to {given}"
            )


def test_an_empty_result_is_a_new_list_every_time() -> None:
    """An empty result is a new list too: appending to one changes no later answer."""
    calls: dict[str, Callable[[], list[Interval]]] = {
        "merge([])": lambda: merge([]),
        "coverage({'a': [(0, 1)]}, 2)": lambda: coverage({"a": [(0, 1)]}, 2),
        "coverage({'a': [(0, 1)], 'b': [(5, 6)]}, 2)":
            lambda: coverage({"a": [(0, 1)], "b": [(5, 6)]}, 2),
        "all_busy({'a': [(0, 1)], 'b': []})": lambda: all_busy({"a": [(0, 1)], "b": []}),
        "all_busy({})": lambda: all_busy({}),
    }
    for name, call in calls.items():
        first = call()
        assert first == [], f"{name} returned {first}, expected []"
        first.append((0, 1))
        try:
            for again, later in calls.items():
                got = later()
                assert got == [], (
                    f"after the caller appended (0, 1) to the [] that {name} returned, {again} "
                    f"returned {got}, expected []: an empty result must be a new list, not one "
                    "shared between calls"
                )
        finally:
            first.clear()  # a shared list is left as it was, for the checks that follow


@pytest.mark.points(2)
def test_each_call_answers_only_its_own_input() -> None:
    """Nothing is kept between calls: a call that raised leaves nothing behind, and a mapping
    changed between calls is read afresh (and validated again)."""
    reversed_, not_a_pair = (2, 1), (7, "x")
    failing: list[tuple[str, Callable[[], object]]] = []
    for bad in (reversed_, not_a_pair):
        mixed: list[Any] = [(0, 5), (6, 8), bad]
        failing += [
            (f"merge({mixed})", partial(merge, mixed)),
            (f"busy_time({mixed})", partial(busy_time, mixed)),
            (f"coverage({{'a': [(0, 5)], 'b': {mixed}}}, 1)",
             partial(coverage, {"a": [(0, 5)], "b": mixed}, 1)),
            (f"all_busy({{'a': [(0, 5)], 'b': {mixed}}})",
             partial(all_busy, {"a": [(0, 5)], "b": mixed})),
        ]
    for shown, call in failing:
        try:
            call()
        except (TypeError, ValueError):
            pass
        else:
            pytest.fail(f"{shown} raised nothing, expected TypeError or ValueError")
        for good, got, want in [
            ("merge([(10, 11)])", merge([(10, 11)]), [(10, 11)]),
            ("busy_time([(10, 11)])", busy_time([(10, 11)]), 1),
            ("coverage({'c': [(10, 11)]}, 1)", coverage({"c": [(10, 11)]}, 1), [(10, 11)]),
            ("all_busy({'c': [(10, 11)]})", all_busy({"c": [(10, 11)]}), [(10, 11)]),
        ]:
            assert got == want, f"after {shown} raised, {good} returned {got}, expected {want}"
    busy: Busy = {"a": [(0, 1)], "b": [(0, 4)]}
    for k in (1, 2):
        coverage(busy, k)
    busy["a"].append((3, 6))
    got = coverage(busy, 2)
    assert got == [(0, 1), (3, 4)], (
        f"coverage(busy, 2) after adding (3, 6) to GPU 'a' returned {got}, expected "
        "[(0, 1), (3, 4)]: each call reads the mapping as it is now"
    )
    busy["b"].append((9, 8))
    try:
        got = coverage(busy, 2)
    except ValueError:
        return
    pytest.fail(f"coverage(busy, 2) after adding (9, 8) to GPU 'b' returned {got}, expected "
                "ValueError: each call validates the mapping as it is now")


def _clipped(intervals: list[Interval], lo: float, hi: float,
             first: Iterable[Interval] = ()) -> Iterator[Interval]:
    """`first`, then the union of `intervals` (computed by merge, inside this generator) clipped
    to [lo, hi): a generator that calls the module while another call is reading it."""
    yield from first
    for s, e in merge(intervals):
        if max(s, lo) < min(e, hi):
            yield (max(s, lo), min(e, hi))


def _both_busy(busy: Busy) -> Iterator[Interval]:
    """The times both GPUs of another job are busy, computed by coverage inside the generator."""
    yield from coverage(busy, 2)


@pytest.mark.points(2)
def test_a_call_made_while_another_reads_its_input_disturbs_neither() -> None:
    """A call made from inside an input generator (a generator that itself calls merge or
    coverage) leaves the outer call's answer as it would be: each call answers only its own
    arguments."""
    other: Busy = {"x": [(0, 3), (8, 9)], "y": [(1, 9)]}
    cases: list[tuple[str, Callable[[], object], object]] = [
        ("merge(clipped([(0, 10)], 2, 5))", lambda: merge(_clipped([(0, 10)], 2, 5)), [(2, 5)]),
        ("busy_time(clipped([(0, 10)], 2, 5))",
         lambda: busy_time(_clipped([(0, 10)], 2, 5)), 3),
        ("merge(clipped([(0, 10)], 2, 5, first=[(20, 21)]))",
         lambda: merge(_clipped([(0, 10)], 2, 5, [(20, 21)])), [(2, 5), (20, 21)]),
        ("coverage({'a': clipped([(0, 10), (20, 30)], 2, 25), 'b': [(0, 30)]}, 2)",
         lambda: coverage({"a": _clipped([(0, 10), (20, 30)], 2, 25), "b": [(0, 30)]}, 2),
         [(2, 10), (20, 25)]),
        ("all_busy({'a': [(0, 30)], 'b': clipped([(0, 10), (20, 30)], 2, 25)})",
         lambda: all_busy({"a": [(0, 30)], "b": _clipped([(0, 10), (20, 30)], 2, 25)}),
         [(2, 10), (20, 25)]),
        (f"merge(coverage({other}, 2) as a generator)", lambda: merge(_both_busy(other)),
         [(1, 3), (8, 9)]),
        (f"coverage({{'a': coverage({other}, 2) as a generator, 'b': [(2, 20)]}}, 2)",
         lambda: coverage({"a": _both_busy(other), "b": [(2, 20)]}, 2), [(2, 3), (8, 9)]),
    ]
    for shown, call, want in cases:
        got = call()
        assert got == want, (
            f"{shown} returned {got!r}, expected {want!r}: the generator calls the module itself "
            "while the outer call reads it (clipped(ivs, lo, hi) yields merge(ivs) cut to "
            "[lo, hi)), and each call must answer only its own arguments"
        )


def test_pairs_given_as_lists_come_back_as_new_tuples() -> None:
    """Where list pairs are accepted, the results are tuples all the same, even for a pair that
    joins nothing: never the caller's own list."""
    for call, shown in [(merge, "merge"), (lambda ivs: coverage({"a": ivs}, 1), "coverage"),
                        (lambda ivs: all_busy({"a": ivs, "b": [(0, 9)]}), "all_busy")]:
        pairs: list[Any] = [[0, 1], [2, 3], [5.5, 7.25], [6, 7]]
        try:
            got = call(pairs)
        except TypeError:
            continue  # list pairs refused: the statement leaves that open
        well_formed(got, f"{shown} of the list pairs [[0, 1], [2, 3], [5.5, 7.25], [6, 7]]")
        assert got == [(0, 1), (2, 3), (5.5, 7.25)], f"{shown} returned {got!r}"


def _refused_or_by_value(call: Callable[[], object], want: object, shown: str) -> None:
    """Either reading the statement leaves open: a TypeError, or the answer by value."""
    try:
        got = call()
    except TypeError:
        return
    if isinstance(want, list):
        well_formed(got, shown)
    assert got == want, f"{shown} returned {got!r}: expected TypeError, or {want!r} by value"


def test_other_number_types_and_pairs_are_refused_or_used_by_value() -> None:
    """bool, Fraction or Decimal bounds and list pairs: a TypeError, or the answer by value.

    busy_time returns an int or a float.
    """
    half, third = Fraction(1, 2), Fraction(1, 3)
    fractions: list[Any] = [(third, half), (half, 1)]
    decimals: list[Any] = [(Decimal("0.5"), Decimal("1.5")), (1, 2)]
    lists: list[Any] = [[0, 1], [1, 2]]
    one_list: list[Any] = [[0, 3]]
    cases: list[tuple[Callable[[], object], object, str]] = [
        (lambda: merge([(True, 2)]), [(1, 2)], "merge([(True, 2)])"),
        (lambda: coverage({"a": [(False, True)]}, 1), [(0, 1)],
         "coverage({'a': [(False, True)]}, 1)"),
        (lambda: merge(fractions), [(third, 1)],
         "merge([(Fraction(1, 3), Fraction(1, 2)), (Fraction(1, 2), 1)])"),
        (lambda: merge(decimals), [(0.5, 2)],
         "merge([(Decimal('0.5'), Decimal('1.5')), (1, 2)])"),
        (lambda: merge(lists), [(0, 2)], "merge([[0, 1], [1, 2]])"),
        (lambda: all_busy({"a": one_list, "b": [(1, 4)]}), [(1, 3)],
         "all_busy({'a': [[0, 3]], 'b': [(1, 4)]})"),
    ]
    for call, want, shown in cases:
        _refused_or_by_value(call, want, shown)
    for intervals in ([(0, 2), (1, 3)], [(0.5, 2.0)]):
        got = busy_time(intervals)
        assert isinstance(got, int | float) and not isinstance(got, bool), (
            f"busy_time({intervals}) returned {got!r} of type {type(got).__name__}, "
            "expected an int or a float"
        )


def _yields_after_coverage_at_one(intervals: list[Interval]) -> Iterator[Interval]:
    """`intervals`, after a coverage call at at_least=1 of another job, made inside."""
    coverage({"x": [(0, 1)]}, 1)
    yield from intervals


def test_a_nested_call_with_another_at_least_leaves_the_outer_one_alone() -> None:
    """A coverage call made from inside an input generator with its own at_least leaves the
    outer call's at_least as it was: each call answers only its own arguments."""
    cases: list[tuple[str, Callable[[], object], object]] = [
        ("coverage({'a': [(0, 2)], 'b': gen}, 2)",
         lambda: coverage({"a": [(0, 2)], "b": _yields_after_coverage_at_one([(1, 3)])}, 2),
         [(1, 2)]),
        ("coverage({'a': [(0, 2)], 'b': gen, 'c': [(1.5, 9)]}, 3)",
         lambda: coverage({"a": [(0, 2)], "b": _yields_after_coverage_at_one([(1, 3)]),
                           "c": [(1.5, 9)]}, 3), [(1.5, 2)]),
        ("all_busy({'a': [(0, 2)], 'b': gen})",
         lambda: all_busy({"a": [(0, 2)], "b": _yields_after_coverage_at_one([(1, 3)])}),
         [(1, 2)]),
    ]
    for shown, call, want in cases:
        got = call()
        assert got == want, (
            f"{shown} returned {got!r}, expected {want!r}: gen yields (1, 3) after calling "
            "coverage({'x': [(0, 1)]}, 1) itself, and that call's at_least is its own"
        )


def test_list_pairs_given_are_left_as_they_were() -> None:
    """Where list pairs are accepted, the caller's list still holds its own list pairs after
    the call: no input is modified, not even to turn its pairs into tuples."""
    calls: dict[str, Callable[[list[Any]], object]] = {
        "merge": merge, "busy_time": busy_time,
        "coverage": lambda ivs: coverage({"a": ivs}, 1),
        "all_busy": lambda ivs: all_busy({"a": ivs}),
    }
    for name, call in calls.items():
        pairs: list[Any] = [[0, 1], [1, 2], [5.5, 7.25], [3, 3]]
        before = copy.deepcopy(pairs)
        try:
            call(pairs)
        except TypeError:
            continue  # list pairs refused: the statement leaves that open
        assert pairs == before and all(type(p) is list for p in pairs), (
            f"{name} changed the caller's list {before!r} to {pairs!r}: inputs are never "
            "modified"
        )


class _Bound(float):
    """A float subclass bound, which a weak reference can follow."""


def _called_with_a_bound(call: Callable[[list[Any]], object]) -> weakref.ref[_Bound] | None:
    """A weak reference to a bound passed to `call` (the result dropped), or None where float
    subclasses are refused."""
    bound = _Bound(0.5)
    try:
        call([(bound, 2), (3, 4)])
    except TypeError:
        return None  # float subclasses refused: the statement leaves that open
    return weakref.ref(bound)


def test_nothing_of_an_input_is_kept_after_the_call() -> None:
    """Once a call has returned and its result is dropped, nothing of its input is kept (no
    cache of past inputs): memory does not grow with every new input."""
    calls: dict[str, Callable[[list[Any]], object]] = {
        "merge": merge, "busy_time": busy_time,
        "coverage": lambda ivs: coverage({"a": ivs, "b": [(0, 9)]}, 2),
        "all_busy": lambda ivs: all_busy({"a": ivs}),
    }
    for name, call in calls.items():
        ref = _called_with_a_bound(call)
        gc.collect()
        assert ref is None or ref() is None, (
            f"{name}([(bound, 2), (3, 4)]) kept the bound alive after it returned and its result "
            "was dropped: nothing is kept between calls (a cache of every input seen grows "
            "without end)"
        )
