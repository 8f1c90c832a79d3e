"""Hidden checks for mig_packing, part 1: one GPU's placements, the rule, release."""

from __future__ import annotations

import pytest
from mig_packing import Gpu, Instance
from mig_packing_helpers import MODELS, NAMES, TABLE, mask, placeable_oracle, rule_start

edge = pytest.mark.category("edge_cases")


@pytest.mark.points(2)
@pytest.mark.parametrize("model", MODELS)
def test_each_profile_on_a_new_gpu_goes_where_the_rule_says(model: str) -> None:
    """On a new GPU each profile goes at the start rule 4 picks and spans its own slices."""
    for name in NAMES[model]:
        gpu = Gpu(model)
        got = gpu.place(name)
        want = rule_start(model, 0, name)
        assert want is not None
        mem = TABLE[model][name][0]
        assert got == Instance(name, want, want + mem), (
            f"Gpu({model!r}).place({name!r}) returned {got!r}, "
            f"expected Instance({name!r}, {want}, {want + mem})")


@pytest.mark.points(2)
@pytest.mark.parametrize("model", ["A100-80GB", "H100-80GB"])
def test_a_first_1g_leaves_room_for_the_4g(model: str) -> None:
    """A 1g on a new GPU goes to slice 6, not 0, so a 4g still fits beside it."""
    gpu = Gpu(model)
    first = gpu.place("1g.10gb")
    assert first == Instance("1g.10gb", 6, 7), (
        f"the first place('1g.10gb') returned {first!r}, expected slice 6: at slice 0 it "
        "closes 6 placements (the 4g's and the 7g's among them), at 6 only 4")
    four = gpu.place("4g.40gb")
    assert four == Instance("4g.40gb", 0, 4), f"place('4g.40gb') after a 1g returned {four!r}"


@pytest.mark.points(1)
def test_rule_4_counts_placements_not_profiles() -> None:
    """Beside a 1g at slice 0, a 1g.20gb goes at 6, closing 3 free placements, not at 2, which
    closes 4: rule 4 counts placements, even where the fewer closes a profile's last one."""
    gpu = Gpu("A100-80GB")
    gpu.place("1g.10gb", 0)
    got = gpu.place("1g.20gb")
    assert got == Instance("1g.20gb", 6, 8), (
        f"place('1g.20gb') beside a 1g at slice 0 returned {got!r}, expected start 6: at 6 it "
        "closes 3 free placements (1g@6, 1g.20gb@6, 3g@4), at 2 it closes 4 (1g@2, 1g@3, "
        "1g.20gb@2, 2g@2); that 6 also closes the last 3g placement does not count")


@pytest.mark.points(2)
def test_two_3g_leave_no_room_for_a_1g() -> None:
    """Two 3g.40gb use 6 of 7 compute slices but all 8 memory slices: nothing else fits."""
    gpu = Gpu("A100-80GB")
    placed = [gpu.place("3g.40gb"), gpu.place("3g.40gb")]
    assert placed == [Instance("3g.40gb", 4, 8), Instance("3g.40gb", 0, 4)], (
        f"two place('3g.40gb') returned {placed!r}, expected starts 4 then 0")
    assert gpu.placeable() == set(), (
        f"placeable() with two 3g.40gb returned {gpu.placeable()!r}, expected set(): a free "
        "compute slice is no use without a free memory slice")
    got = gpu.place("1g.10gb")
    assert got is None, f"place('1g.10gb') beside two 3g.40gb returned {got!r}, expected None"


@pytest.mark.points(2)
def test_placeable_needs_a_free_start_not_just_free_slices() -> None:
    """With 1g at slices 1 and 5, six slices are free, yet no 3g, 4g or 7g fits."""
    gpu = Gpu("A100-80GB")
    gpu.place("1g.10gb", 1)
    gpu.place("1g.10gb", 5)
    got = gpu.placeable()
    want = placeable_oracle("A100-80GB", mask(1, 1) | mask(5, 1))
    assert got == want, f"placeable() with 1g at slices 1 and 5 returned {got!r}, expected {want!r}"
    assert gpu.place("4g.40gb") is None, "place('4g.40gb') found room across an occupied slice 1"


@pytest.mark.points(2)
@pytest.mark.parametrize("model", ["A100-40GB", "A100-80GB"])
def test_an_eighth_1g_does_not_fit_at_slice_7(model: str) -> None:
    """Seven 1-slice instances take slices 0-6; slice 7 is free but no 1g may start there."""
    name = NAMES[model][0]
    gpu = Gpu(model)
    starts = sorted(inst.start for inst in (gpu.place(name) for _ in range(7)) if inst)
    assert starts == list(range(7)), f"seven place({name!r}) used starts {starts}, expected 0-6"
    got = gpu.place(name)
    assert got is None, f"an eighth place({name!r}) returned {got!r}: 7 is not one of its starts"


@pytest.mark.points(2)
def test_instances_start_only_where_the_table_allows() -> None:
    """A 4g goes only at slice 0 and a 2g never at slice 6, even where the slices are free."""
    gpu = Gpu("A100-80GB")
    gpu.place("2g.20gb", 0)
    got = gpu.place("4g.40gb")
    assert got is None, f"place('4g.40gb') with slices 2-7 free returned {got!r}: 0 is its start"
    gpu.place("2g.20gb", 2)
    gpu.place("2g.20gb", 4)
    got = gpu.place("2g.20gb")
    assert got is None, f"a fourth place('2g.20gb') returned {got!r}; 6 is not one of its starts"
    assert "2g.20gb" not in gpu.placeable(), "placeable() offers a 2g.20gb with only 6-7 free"
    assert "1g.20gb" in gpu.placeable(), "placeable() leaves out the 1g.20gb that fits at 6"


@pytest.mark.points(2)
def test_a100_40gb_1g_10gb_takes_two_slices() -> None:
    """On an A100-40GB, 1g.10gb spans 2 memory slices (four fit), unlike on the 80 GB parts."""
    gpu = Gpu("A100-40GB")
    placed = [gpu.place("1g.10gb") for _ in range(4)]
    assert all(p is not None and p.end - p.start == 2 for p in placed), (
        f"four place('1g.10gb') on an A100-40GB returned {placed!r}: each spans 2 slices")
    got = gpu.place("1g.10gb")
    assert got is None, f"a fifth 1g.10gb on an A100-40GB returned {got!r}, expected None"
    eighty = Gpu("A100-80GB")
    assert [eighty.place("1g.10gb") is not None for _ in range(7)] == [True] * 7, (
        "seven 1g.10gb must fit on an A100-80GB: there it spans 1 slice")


@pytest.mark.points(1)
def test_place_at_a_given_start_goes_exactly_there() -> None:
    """place(profile, start) puts the instance at that start, or returns None if it is taken."""
    gpu = Gpu("H100-80GB")
    got = gpu.place("3g.40gb", 0)
    assert got == Instance("3g.40gb", 0, 4), f"place('3g.40gb', 0) returned {got!r}"
    got = gpu.place("1g.10gb", 3)
    assert got is None, f"place('1g.10gb', 3) inside the 3g returned {got!r}, expected None"
    got = gpu.place("1g.20gb", 4)
    assert got == Instance("1g.20gb", 4, 6), f"place('1g.20gb', 4) returned {got!r}"


@pytest.mark.points(2)
def test_release_frees_exactly_the_instances_slices() -> None:
    """Releasing an instance frees all of its slices and no others."""
    gpu = Gpu("A100-80GB")
    three = gpu.place("3g.40gb", 0)
    two = gpu.place("2g.20gb", 4)
    gpu.place("1g.10gb", 6)
    assert three is not None and two is not None
    gpu.release(two)
    want = placeable_oracle("A100-80GB", mask(0, 4) | mask(6, 1))
    assert gpu.placeable() == want, (
        f"after releasing {two!r}, placeable() returned {gpu.placeable()!r}, expected {want!r}")
    gpu.release(three)
    want = placeable_oracle("A100-80GB", mask(6, 1))
    assert gpu.placeable() == want, (
        f"after releasing {three!r} too, placeable() is {gpu.placeable()!r}, expected {want!r}")
    assert gpu.instances() == [Instance("1g.10gb", 6, 7)], f"instances() is {gpu.instances()!r}"


def test_an_equal_instance_with_float_fields_is_released() -> None:
    """Instances compare by value, so Instance("3g.40gb", 0.0, 4.0) equals the held 3g at 0:
    releasing it frees exactly that instance's slices."""
    gpu = Gpu("A100-80GB")
    gpu.place("3g.40gb", 0)
    one = gpu.place("1g.10gb", 6)
    gpu.release(Instance("3g.40gb", 0.0, 4.0))  # type: ignore[arg-type]
    assert gpu.instances() == [one], f"instances() after the release: {gpu.instances()!r}"
    want = placeable_oracle("A100-80GB", mask(6, 1))
    assert gpu.placeable() == want, (
        f"after releasing the 3g, placeable() is {gpu.placeable()!r}, expected {want!r}")


@pytest.mark.points(1)
def test_instances_lists_what_is_held_by_start() -> None:
    """instances() lists the instances held, sorted by start."""
    gpu = Gpu("A100-80GB")
    for name, start in [("1g.10gb", 6), ("4g.40gb", 0), ("1g.10gb", 4)]:
        gpu.place(name, start)
    want = [Instance("4g.40gb", 0, 4), Instance("1g.10gb", 4, 5), Instance("1g.10gb", 6, 7)]
    assert gpu.instances() == want, f"instances() returned {gpu.instances()!r}, expected {want!r}"


@edge
@pytest.mark.parametrize("model", MODELS)
def test_a_new_gpu_can_place_every_profile(model: str) -> None:
    """A new GPU holds nothing, and every profile of its model is placeable."""
    gpu = Gpu(model)
    assert gpu.instances() == [], f"Gpu({model!r}).instances() is {gpu.instances()!r}"
    assert gpu.placeable() == set(NAMES[model]), f"placeable() is {gpu.placeable()!r}"
    assert gpu.model == model, f"Gpu({model!r}).model is {gpu.model!r}"


@edge
def test_a_7g_fills_the_gpu() -> None:
    """A 7g spans all 8 slices: afterwards nothing is placeable and every place returns None."""
    gpu = Gpu("H100-80GB")
    got = gpu.place("7g.80gb")
    assert got == Instance("7g.80gb", 0, 8), f"place('7g.80gb') returned {got!r}"
    assert gpu.placeable() == set(), f"placeable() beside a 7g is {gpu.placeable()!r}"
    refused = {name: gpu.place(name) for name in NAMES["H100-80GB"]}
    assert all(v is None for v in refused.values()), f"place beside a 7g returned {refused!r}"


@edge
def test_a_refused_place_changes_nothing() -> None:
    """A place that returns None leaves the instances and placeable() as they were."""
    gpu = Gpu("A100-80GB")
    gpu.place("3g.40gb", 4)
    gpu.place("1g.10gb", 1)
    before, offered = gpu.instances(), gpu.placeable()
    assert gpu.place("4g.40gb") is None
    assert gpu.place("2g.20gb", 0) is None
    assert gpu.instances() == before, f"a refused place changed instances() to {gpu.instances()!r}"
    assert gpu.placeable() == offered, f"a refused place changed placeable() to {gpu.placeable()!r}"


@edge
def test_a_released_start_can_be_used_again() -> None:
    """After a release the same slices take a new instance, of another profile too."""
    gpu = Gpu("A100-80GB")
    four = gpu.place("4g.40gb")
    assert four is not None
    gpu.release(four)
    got = gpu.place("3g.40gb", 0)
    assert got == Instance("3g.40gb", 0, 4), f"place('3g.40gb', 0) after the release gave {got!r}"


def _occupancies() -> list[int]:
    """Every set of occupied slices a GPU can reach: slice 7 is taken only with slice 6."""
    return [used for used in range(256) if not (used >> 7 & 1 and not used >> 6 & 1)]


def _gpu_holding(model: str, used: int, churn: bool = False) -> Gpu:
    """A GPU whose occupied slices are exactly ``used``, built from 1- and 2-slice instances;
    with ``churn``, each free 1-slice start is then taken and released again."""
    single, quarter = NAMES[model][0], NAMES[model][1]
    gpu = Gpu(model)
    for s in range(6):
        if used >> s & 1:
            gpu.place(single, s)
    if used >> 6 & 3 == 3:
        gpu.place(quarter, 6)
    elif used >> 6 & 1:
        gpu.place(single, 6)
    if churn:
        for s in range(7):
            if not used >> s & 1:
                held = gpu.place(single, s)
                assert held is not None
                gpu.release(held)
    return gpu


def _describe(gpu: Gpu) -> str:
    return ", ".join(f"{i.profile}@{i.start}" for i in gpu.instances()) or "nothing"


def _check_every_occupancy(model: str, churn: bool) -> None:
    how = " (after placing and releasing a 1-slice instance on each free slice)" if churn else ""
    for used in _occupancies():
        gpu = _gpu_holding(model, used, churn)
        got_placeable = gpu.placeable()
        want_placeable = placeable_oracle(model, used)
        assert got_placeable == want_placeable, (
            f"Gpu({model!r}) holding {_describe(gpu)}{how}: placeable() returned "
            f"{sorted(got_placeable)}, expected {sorted(want_placeable)}")
        for name in NAMES[model]:
            gpu = _gpu_holding(model, used, churn)
            held = _describe(gpu)
            got = gpu.place(name)
            want = rule_start(model, used, name)
            mem = TABLE[model][name][0]
            expected = None if want is None else Instance(name, want, want + mem)
            assert got == expected, (
                f"Gpu({model!r}) holding {held}{how}: place({name!r}) returned {got!r}, "
                f"expected {expected!r} (rule 4: of the free starts, the one closing the fewest "
                "free placements, a placement being free when none of its slices is taken)")


@pytest.mark.points(2)
@pytest.mark.parametrize("model", ["A100-40GB", "A100-80GB"])
def test_place_follows_rule_4_from_every_occupancy(model: str) -> None:
    """From every set of occupied slices a GPU can reach, place(profile) picks rule 4's start
    and placeable() lists exactly what fits."""
    _check_every_occupancy(model, churn=False)


@pytest.mark.points(2)
def test_place_follows_rule_4_after_releases() -> None:
    """After instances were placed and released again, place(profile) still scores only the
    placements that are free now: from every occupancy it picks rule 4's start."""
    _check_every_occupancy("A100-80GB", churn=True)
