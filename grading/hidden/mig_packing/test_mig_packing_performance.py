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


def _assert_linear_on_a_fleet(profile: str, per_gpu: int, small: int, grow: int, limit: float,
                              cause: str) -> None:
    """plan for ``grow`` times ``small`` GPUs of ``per_gpu`` ``profile`` each takes at most
    ``limit`` times the time of ``small`` GPUs. The plan is checked at the small size only: the
    large call is made under a budget, in growth(), so a slow answer fails rather than times out."""
    model, large = "A100-80GB", small * grow
    few, many = {profile: per_gpu * small}, {profile: per_gpu * large}
    got = plan(few, small, model)
    assert got is not None, f"plan({few}, {small}) returned None; {per_gpu} {profile} fit a GPU"
    check_plan(got, few, small, model)

    ratio = growth(lambda: plan(few, small, model), lambda: plan(many, large, model), limit)
    assert ratio < limit, (
        f"plan on {large} GPUs of {per_gpu} {profile} each took {times(ratio, limit)} the time "
        f"of {small}: expected about {grow}x; work that grows with the fleet for each {cause} "
        "makes it quadratic")


# A fleet of 2g only (three a GPU, at 0, 2 and 4): 4,000 -> 64,000 GPUs. Linear work takes
# 16x to about 35x (the large lists outgrow the caches); taking each GPU or quarter from the
# front of a list (list.pop(0)) is quadratic and takes well over 150x.
_BIG_SMALL, _BIG_LIMIT = 4_000, 100.0


@pytest.mark.category("performance")
@pytest.mark.timeout(120)
@pytest.mark.points(2)
def test_plan_time_stays_linear_on_a_fleet_of_64000_gpus() -> None:
    """plan for 64,000 GPUs of three 2g each takes about 16x the time of 4,000, not more."""
    _assert_linear_on_a_fleet("2g.20gb", 3, _BIG_SMALL, _GROWTH, _BIG_LIMIT,
                              "GPU or instance (such as list.pop(0))")


# A fleet of whole GPUs only: 1,000 -> 128,000 GPUs of one 7g each. Linear work takes 128x to
# about 300x (the large lists outgrow the caches); putting each whole GPU at the front of the
# list (list.insert(0, ...)) is quadratic in the 7g count and takes thousands of times as long.
_WHOLE_SMALL, _WHOLE_GROWTH, _WHOLE_LIMIT = 1_000, 128, 1_000.0


@pytest.mark.category("performance")
@pytest.mark.timeout(120)
@pytest.mark.points(2)
def test_plan_time_stays_linear_on_a_fleet_of_whole_gpus() -> None:
    """plan for 128,000 GPUs of one 7g each takes about 128x the time of 1,000, not more."""
    _assert_linear_on_a_fleet("7g.80gb", 1, _WHOLE_SMALL, _WHOLE_GROWTH, _WHOLE_LIMIT,
                              "whole GPU (such as list.insert(0, ...))")


# Two 3g a GPU: 2,000 -> 64,000 GPUs. Half the 3g go to right halves and half to left ones.
# Linear work takes 32x to about 70x (the large lists outgrow the caches); finding each left
# half with a scan from GPU 0 (list.index) is quadratic in the 3g count and takes about 1,000x.
_HALVES_SMALL, _HALVES_GROWTH, _HALVES_LIMIT = 2_000, 32, 200.0


@pytest.mark.category("performance")
@pytest.mark.timeout(300)
@pytest.mark.points(2)
def test_plan_time_stays_linear_when_3g_fill_left_halves_too() -> None:
    """plan for 64,000 GPUs of two 3g each takes about 32x the time of 2,000, not more."""
    _assert_linear_on_a_fleet("3g.40gb", 2, _HALVES_SMALL, _HALVES_GROWTH, _HALVES_LIMIT,
                              "3g (such as a scan from the first GPU for a free left half)")


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
    _assert_linear_on_a_fleet("1g.20gb", 1, _SHORT_SMALL, _SHORT_GROWTH, _SHORT_LIMIT,
                              "1g.20gb (such as taking the next free slices 6-7 from the front "
                              "of a list with list.pop(0))")


# One 4g a GPU: 2,000 -> 64,000 GPUs, each 4g in a left half (the only place a 4g goes).
# Linear work takes 32x to about 70x (the large lists outgrow the caches); finding each 4g's
# left half with a scan from GPU 0 (list.index) is quadratic in the 4g count and takes about
# 1,000x.
_FOURS_SMALL, _FOURS_GROWTH, _FOURS_LIMIT = 2_000, 32, 200.0


@pytest.mark.category("performance")
@pytest.mark.timeout(300)
@pytest.mark.points(2)
def test_plan_time_stays_linear_on_a_fleet_of_4g() -> None:
    """plan for 64,000 GPUs of one 4g each takes about 32x the time of 2,000, not more."""
    _assert_linear_on_a_fleet("4g.40gb", 1, _FOURS_SMALL, _FOURS_GROWTH, _FOURS_LIMIT,
                              "4g (such as a scan from the first GPU for a free left half)")


# One 7g on 4,000 -> 256,000 GPUs: all but one GPU idle. Linear work takes 64x to about 140x
# (the large lists outgrow the caches); putting each idle GPU's [] at the front of the list
# (list.insert(0, [])) is quadratic in the idle GPUs and takes well over 1,000x.
_IDLE_SMALL, _IDLE_GROWTH, _IDLE_LIMIT = 4_000, 64, 400.0


@pytest.mark.category("performance")
@pytest.mark.timeout(300)
@pytest.mark.points(2)
def test_plan_time_stays_linear_in_idle_gpus() -> None:
    """plan for one 7g on 256,000 GPUs, the rest idle, takes about 64x the time of 4,000 GPUs,
    not more."""
    model, small, large = "A100-80GB", _IDLE_SMALL, _IDLE_SMALL * _IDLE_GROWTH
    one = {"7g.80gb": 1}
    got = plan(one, small, model)
    assert got is not None, f"plan({one}, {small}) returned None; a 7g fits a GPU"
    check_plan(got, one, small, model)

    ratio = growth(lambda: plan(one, small, model), lambda: plan(one, large, model), _IDLE_LIMIT)
    assert ratio < _IDLE_LIMIT, (
        f"plan for one 7g on {large} GPUs took {times(ratio, _IDLE_LIMIT)} the time of {small} "
        f"GPUs: expected about {_IDLE_GROWTH}x; work that grows with the fleet for each idle GPU "
        "(such as list.insert(0, []) to list idle GPUs first) makes it quadratic")
