"""Hidden checks for mig_packing, part 2: exact plans for a fleet of empty GPUs."""

from __future__ import annotations

from collections import UserDict, defaultdict
from collections.abc import Iterator, Mapping
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st
from mig_packing import Instance, plan
from mig_packing_helpers import MODELS, check_plan, feasible, near_the_edge

edge = pytest.mark.category("edge_cases")
_PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)


def _must_plan(requests: dict[str, int], gpus: int, model: str, why: str) -> None:
    got = plan(requests, gpus, model)
    assert got is not None, f"plan({requests}, {gpus}, {model!r}) returned None; {why}"
    check_plan(got, requests, gpus, model)


def _must_refuse(requests: dict[str, int], gpus: int, model: str, why: str) -> None:
    got = plan(requests, gpus, model)
    assert got is None, f"plan({requests}, {gpus}, {model!r}) returned {got!r}, not None; {why}"


@pytest.mark.points(3)
def test_plan_packs_what_largest_first_misses() -> None:
    """Two 3g.40gb and four 2g.20gb fit on two GPUs, though largest-first packing fails."""
    _must_plan({"3g.40gb": 2, "2g.20gb": 4}, 2, "A100-80GB",
               "a 3g.40gb at slice 4 of each GPU leaves slices 0-3 of each for two 2g.20gb")
    _must_plan({"3g.40gb": 3, "2g.20gb": 2, "7g.80gb": 1}, 3, "H100-80GB",
               "one GPU for the 7g, a 3g at 4 on the others, the third 3g at 0, 2g at 0 and 2")


@pytest.mark.points(2)
def test_plan_puts_a_3g_where_the_4g_cannot_go() -> None:
    """A 4g and a 3g share one GPU: the 4g takes slices 0-3, the 3g slices 4-7."""
    _must_plan({"4g.40gb": 1, "3g.40gb": 1}, 1, "A100-80GB", "4g at 0 and 3g at 4 fit")
    _must_plan({"4g.20gb": 2, "3g.20gb": 2}, 2, "A100-40GB", "each GPU takes a 4g and a 3g")
    _must_refuse({"4g.40gb": 2}, 1, "A100-80GB", "a 4g starts at slice 0 only")


@pytest.mark.points(2)
def test_plan_gives_slices_6_and_7_to_a_two_slice_1g() -> None:
    """A 1g.20gb goes at slice 6, where a 1g.10gb could use only slice 6, leaving 0-5 for six."""
    _must_plan({"1g.20gb": 1, "1g.10gb": 6}, 1, "A100-80GB",
               "1g.20gb at 6 and six 1g.10gb at 0-5 fit")
    _must_plan({"1g.20gb": 2, "2g.20gb": 1, "1g.10gb": 6}, 2, "H100-80GB",
               "each GPU's slices 6-7 take a 1g.20gb")


@pytest.mark.points(2)
def test_plan_refuses_what_counting_slices_allows() -> None:
    """plan returns None where counting compute or memory slices says the instances fit."""
    _must_refuse({"3g.40gb": 2, "1g.10gb": 1}, 1, "A100-80GB",
                 "6 of 7 compute slices are used, but all 8 memory slices")
    _must_refuse({"1g.10gb": 8}, 1, "A100-80GB", "no 1g starts at slice 7")
    _must_refuse({"2g.20gb": 4}, 1, "A100-80GB", "no 2g starts at slice 6")
    _must_refuse({"4g.40gb": 1, "2g.20gb": 2}, 1, "A100-80GB", "only one 2g fits beside a 4g")


@pytest.mark.points(2)
def test_plan_uses_the_a100_40gb_table() -> None:
    """On an A100-40GB, 1g.10gb is the 2-slice profile: four fit on a GPU, five do not."""
    _must_plan({"1g.10gb": 4}, 1, "A100-40GB", "four 2-slice 1g.10gb fit at 0, 2, 4 and 6")
    _must_refuse({"1g.10gb": 5}, 1, "A100-40GB", "an A100-40GB 1g.10gb spans 2 slices")
    _must_plan({"1g.5gb": 7}, 1, "A100-40GB", "seven 1g.5gb fit at 0-6")


@pytest.mark.points(4)
@pytest.mark.parametrize("model", MODELS)
@settings(max_examples=80, phases=_PHASES)
@given(data=st.data())
def test_plan_is_exact_on_small_fleets(model: str, data: st.DataObject) -> None:
    """plan finds a valid plan exactly when brute force over every layout finds one (<= 3 GPUs)."""
    gpus = data.draw(st.integers(0, 3), label="gpus")
    requests = data.draw(near_the_edge(model, gpus), label="requests")
    got = plan(requests, gpus, model)
    want = feasible(model, requests, gpus)
    if want:
        assert got is not None, f"plan({requests}, {gpus}, {model!r}) returned None; a plan exists"
        check_plan(got, requests, gpus, model)
    else:
        assert got is None, f"plan({requests}, {gpus}, {model!r}) returned {got!r}; none exists"


class _Requests(Mapping[str, int]):
    """A Mapping with only the abstract methods: no copy(), no dict underneath."""

    def __init__(self, counts: dict[str, int]) -> None:
        self._counts = counts

    def __getitem__(self, name: str) -> int:
        return self._counts[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._counts)

    def __len__(self) -> int:
        return len(self._counts)

    def __repr__(self) -> str:
        return f"a Mapping subclass holding {self._counts}"


def test_plan_takes_any_mapping_of_requests() -> None:
    """requests is any Mapping, not only a dict: a read-only MappingProxyType, or a Mapping
    subclass with no dict methods such as copy(), plans as its dict."""
    for requests in [{"7g.80gb": 1}, {"3g.40gb": 2, "2g.20gb": 4}]:
        views: list[Mapping[str, int]] = [MappingProxyType(requests), _Requests(requests)]
        for view in views:
            try:
                got = plan(view, 2, "A100-80GB")
            except (TypeError, AttributeError) as err:
                pytest.fail(f"plan({view!r}, 2, 'A100-80GB') raised {err!r}: any Mapping is "
                            "accepted, and only its Mapping methods may be used")
            assert got is not None, f"plan({view!r}, 2) returned None; it fits"
            check_plan(got, requests, 2, "A100-80GB")


@pytest.mark.points(1)
def test_plan_takes_mappings_that_are_not_dicts() -> None:
    """requests need not be a dict: a read-only MappingProxyType or a UserDict plans as the
    dict it holds."""
    requests = {"3g.40gb": 2, "2g.20gb": 4}
    views: list[Mapping[str, int]] = [MappingProxyType(requests), UserDict(requests)]
    for view in views:
        try:
            got = plan(view, 2, "A100-80GB")
        except TypeError as err:
            pytest.fail(f"plan({view!r}, 2, 'A100-80GB') raised {err!r}: any Mapping is "
                        "accepted, not only a dict")
        assert got is not None, f"plan({view!r}, 2) returned None; it fits"
        check_plan(got, requests, 2, "A100-80GB")


def test_plan_adds_nothing_to_a_defaultdict_of_requests() -> None:
    """plan leaves requests as they were: a defaultdict of requests gains no entry (reading
    requests[name] for a profile not listed would add one)."""
    for requests, gpus in [({"3g.40gb": 1}, 1), ({"2g.20gb": 4, "3g.40gb": 2}, 2),
                           ({"7g.80gb": 3}, 2)]:
        counts = defaultdict(int, requests)
        plan(counts, gpus, "A100-80GB")
        assert dict(counts) == requests, (
            f"plan(defaultdict(int, {requests}), {gpus}, 'A100-80GB') changed the requests to "
            f"{dict(counts)}: plan must leave the caller's mapping as it was (read only the "
            "names it holds, or use .get)")


@pytest.mark.category("bad_input")
@pytest.mark.points(1)
def test_zero_gpus_still_check_every_request() -> None:
    """With zero GPUs a request is checked as with one: an unknown name, a negative count or a
    count that is not an int raises, rather than being answered None."""
    cases: list[tuple[dict[str, Any], type[Exception]]] = [
        ({"9g.90gb": 1}, ValueError), ({"1g.5gb": 2}, ValueError),
        ({"1g.10gb": -1}, ValueError), ({"1g.10gb": 1.5}, TypeError)]
    for requests, error in cases:
        try:
            got = plan(requests, 0, "A100-80GB")
        except error:
            continue
        pytest.fail(f"plan({requests}, 0, 'A100-80GB') returned {got!r}: expected "
                    f"{error.__name__}, as with one GPU; zero GPUs do not skip the checks")


@pytest.mark.points(1)
def test_plan_returns_one_layout_per_gpu() -> None:
    """plan returns one list per GPU, an empty one for a GPU it leaves idle."""
    got = plan({"7g.80gb": 1}, 3, "H100-80GB")
    assert got is not None and sorted(map(len, got)) == [0, 0, 1], (
        f"plan({{'7g.80gb': 1}}, 3, 'H100-80GB') returned {got!r}, expected one 7g and two []")
    assert [Instance("7g.80gb", 0, 8)] in got, f"the 7g is not at slices [0, 8) in {got!r}"


@edge
@pytest.mark.points(2)
def test_plan_of_nothing_is_idle_gpus() -> None:
    """No requests (or only zero counts) give one empty layout per GPU; zero GPUs give [],
    for zero counts too."""
    cases: list[tuple[dict[str, int], int, list[list[Instance]]]] = [
        ({}, 2, [[], []]), ({"1g.10gb": 0, "7g.80gb": 0}, 1, [[]]), ({}, 0, []),
        ({"3g.40gb": 0}, 0, []), ({"1g.10gb": 0, "7g.80gb": 0}, 0, [])]
    for requests, gpus, want in cases:
        got = plan(requests, gpus, "A100-80GB")
        assert got == want, f"plan({requests}, {gpus}, 'A100-80GB') is {got!r}, expected {want}"


@edge
def test_plan_with_no_gpus_refuses_any_request() -> None:
    """With zero GPUs any positive request is infeasible: None."""
    _must_refuse({"1g.10gb": 1}, 0, "A100-80GB", "there is no GPU to hold it")


@edge
@pytest.mark.points(2)
@example(gpus=1, spare=0)
@example(gpus=1, spare=1)
@given(gpus=st.integers(1, 40), spare=st.integers(0, 1))
def test_plan_fills_a_fleet_to_the_last_slice(gpus: int, spare: int) -> None:
    """7 x gpus 1g.10gb fit exactly; one more does not."""
    requests = {"1g.10gb": 7 * gpus + spare}
    if spare:
        _must_refuse(requests, gpus, "A100-80GB", "each GPU holds seven 1g.10gb at most")
    else:
        _must_plan(requests, gpus, "A100-80GB", "seven 1g.10gb fit on each GPU")


@edge
@pytest.mark.points(2)
@example(gpus=1)
@given(gpus=st.integers(1, 40))
def test_plan_fills_every_half_of_a_fleet(gpus: int) -> None:
    """gpus 4g and gpus 3g fit (one of each per GPU); a 3g more, or a 4g more, does not."""
    _must_plan({"4g.40gb": gpus, "3g.40gb": gpus}, gpus, "A100-80GB", "4g at 0, 3g at 4")
    _must_refuse({"4g.40gb": gpus, "3g.40gb": gpus + 1}, gpus, "A100-80GB", "no half is left")
    _must_refuse({"4g.40gb": gpus + 1}, gpus, "A100-80GB", "a 4g needs slices 0-3 of its own GPU")
