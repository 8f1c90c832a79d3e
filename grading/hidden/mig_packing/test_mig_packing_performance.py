"""Hidden checks for mig_packing: plan's time grows with the fleet, not faster."""

from __future__ import annotations

import pytest
from kata_measure import times
from mig_packing import plan
from mig_packing_helpers import check_plan, fleet_requests, growth

# 16x the GPUs and requests (75 -> 1,200 GPUs, about 310 -> 4,970 instances): linear work
# takes about 16x, a scan per instance about 256x, a search over GPUs far more.
_SMALL, _GROWTH, _LIMIT = 75, 16, 60.0


@pytest.mark.category("performance")
@pytest.mark.timeout(60)
@pytest.mark.points(3)
def test_plan_time_grows_linearly_with_the_fleet() -> None:
    """plan for 1,200 GPUs and ~5,000 instances takes about 16x the time of 75 GPUs, not more."""
    model, large = "A100-80GB", _SMALL * _GROWTH
    few, many = fleet_requests(model, _SMALL), fleet_requests(model, large)
    got = plan(many, large, model)
    assert got is not None, f"plan({many}, {large}) returned None; the fleet mix fits exactly"
    check_plan(got, many, large, model)
    one_more = {**many, "1g.10gb": many["1g.10gb"] + 1}
    few_more = {**few, "1g.10gb": few["1g.10gb"] + 1}

    def small() -> None:
        plan(few, _SMALL, model)
        plan(few_more, _SMALL, model)

    def big() -> None:
        plan(many, large, model)
        plan(one_more, large, model)

    ratio = growth(small, big, _LIMIT)
    assert ratio < _LIMIT, (
        f"plan on {large} GPUs took {ratio:.0f}x the time of {_SMALL} GPUs: expected about "
        f"{_GROWTH}x (work per request and per GPU); that grows faster than the fleet")


# A fleet of 2g only (three a GPU, at 0, 2 and 4): 4,000 -> 64,000 GPUs. Linear work takes
# 16x to about 35x (the large lists outgrow the caches); taking each GPU or quarter from the
# front of a list (list.pop(0)) is quadratic and takes well over 150x.
_BIG_SMALL, _BIG_LIMIT = 4_000, 100.0


@pytest.mark.category("performance")
@pytest.mark.timeout(120)
@pytest.mark.points(2)
def test_plan_time_stays_linear_on_a_fleet_of_64000_gpus() -> None:
    """plan for 64,000 GPUs of three 2g each takes about 16x the time of 4,000, not more."""
    model, large = "A100-80GB", _BIG_SMALL * _GROWTH
    many = {"2g.20gb": 3 * large}
    got = plan(many, large, model)
    assert got is not None, f"plan({many}, {large}) returned None; three 2g fit on each GPU"
    assert sum(map(len, got)) == 3 * large and len(got) == large, (
        f"plan({many}, {large}) returned {len(got)} layouts holding {sum(map(len, got))} "
        f"instances, expected {large} layouts holding {3 * large}")

    ratio = growth(lambda: plan({"2g.20gb": 3 * _BIG_SMALL}, _BIG_SMALL, model),
                   lambda: plan(many, large, model), _BIG_LIMIT)
    assert ratio < _BIG_LIMIT, (
        f"plan on {large} GPUs took {ratio:.0f}x the time of {_BIG_SMALL} GPUs: expected about "
        f"{_GROWTH}x; work that grows with the fleet for each GPU or instance (such as "
        "list.pop(0)) makes it quadratic")


# A fleet of whole GPUs only: 1,000 -> 128,000 GPUs of one 7g each. Linear work takes 128x to
# about 300x (the large lists outgrow the caches); putting each whole GPU at the front of the
# list (list.insert(0, ...)) is quadratic in the 7g count and takes thousands of times as long.
_WHOLE_SMALL, _WHOLE_GROWTH, _WHOLE_LIMIT = 1_000, 128, 1_000.0


@pytest.mark.category("performance")
@pytest.mark.timeout(120)
@pytest.mark.points(2)
def test_plan_time_stays_linear_on_a_fleet_of_whole_gpus() -> None:
    """plan for 128,000 GPUs of one 7g each takes about 128x the time of 1,000, not more."""
    model, large = "A100-80GB", _WHOLE_SMALL * _WHOLE_GROWTH
    many = {"7g.80gb": large}
    got = plan(many, large, model)
    assert got is not None and len(got) == large and all(len(g) == 1 for g in got), (
        f"plan({many}, {large}) did not return {large} layouts of one 7g each")

    ratio = growth(lambda: plan({"7g.80gb": _WHOLE_SMALL}, _WHOLE_SMALL, model),
                   lambda: plan(many, large, model), _WHOLE_LIMIT)
    assert ratio < _WHOLE_LIMIT, (
        f"plan on {large} GPUs of one 7g each took {ratio:.0f}x the time of {_WHOLE_SMALL}: "
        f"expected about {_WHOLE_GROWTH}x; work that grows with the fleet for each whole GPU "
        "(such as list.insert(0, ...)) makes it quadratic")


# Two 3g a GPU: 2,000 -> 64,000 GPUs. Half the 3g go to right halves and half to left ones.
# Linear work takes 32x to about 70x (the large lists outgrow the caches); finding each left
# half with a scan from GPU 0 (list.index) is quadratic in the 3g count and takes about 1,000x.
_HALVES_SMALL, _HALVES_GROWTH, _HALVES_LIMIT = 2_000, 32, 200.0


@pytest.mark.category("performance")
@pytest.mark.timeout(300)
@pytest.mark.points(2)
def test_plan_time_stays_linear_when_3g_fill_left_halves_too() -> None:
    """plan for 64,000 GPUs of two 3g each takes about 32x the time of 2,000, not more."""
    model, large = "A100-80GB", _HALVES_SMALL * _HALVES_GROWTH
    many = {"3g.40gb": 2 * large}
    # Checked at the small size only: the large call is made under a budget, in growth().
    few = {"3g.40gb": 2 * _HALVES_SMALL}
    got = plan(few, _HALVES_SMALL, model)
    assert got is not None and len(got) == _HALVES_SMALL and all(len(g) == 2 for g in got), (
        f"plan({few}, {_HALVES_SMALL}) did not return {_HALVES_SMALL} layouts of two 3g each")

    ratio = growth(lambda: plan(few, _HALVES_SMALL, model), lambda: plan(many, large, model),
                   _HALVES_LIMIT)
    assert ratio < _HALVES_LIMIT, (
        f"plan on {large} GPUs of two 3g each took {ratio:.0f}x the time of {_HALVES_SMALL}: "
        f"expected about {_HALVES_GROWTH}x; work that grows with the fleet for each 3g (such as "
        "a scan from the first GPU for a free left half) makes it quadratic")


# One 1g.20gb a GPU: 4,000 -> 256,000 GPUs, each 1g.20gb at slice 6, the only start where it
# costs one 1-slice place. Linear work takes 64x to about 140x (the large lists outgrow the
# caches); handing out the slices 6-7 quarters from the front of a list (list.pop(0)) is
# quadratic in the 1g.20gb count and takes well over 1,000x.
_SHORT_SMALL, _SHORT_GROWTH, _SHORT_LIMIT = 4_000, 64, 400.0


@pytest.mark.category("performance")
@pytest.mark.timeout(300)
@pytest.mark.points(2)
def test_plan_time_stays_linear_on_a_fleet_of_2_slice_1g() -> None:
    """plan for 256,000 GPUs of one 1g.20gb each takes about 64x the time of 4,000, not more."""
    model, large = "A100-80GB", _SHORT_SMALL * _SHORT_GROWTH
    many = {"1g.20gb": large}
    # Checked at the small size only: the large call is made under a budget, in growth().
    few = {"1g.20gb": _SHORT_SMALL}
    got = plan(few, _SHORT_SMALL, model)
    assert got is not None, f"plan({few}, {_SHORT_SMALL}) returned None; one 1g.20gb fits a GPU"
    check_plan(got, few, _SHORT_SMALL, model)

    ratio = growth(lambda: plan(few, _SHORT_SMALL, model), lambda: plan(many, large, model),
                   _SHORT_LIMIT)
    assert ratio < _SHORT_LIMIT, (
        f"plan on {large} GPUs of one 1g.20gb each took {times(ratio, _SHORT_LIMIT)} the time of "
        f"{_SHORT_SMALL}: expected about {_SHORT_GROWTH}x; work that grows with the fleet for "
        "each 1g.20gb (such as taking the next free slices 6-7 from the front of a list with "
        "list.pop(0)) makes it quadratic")
