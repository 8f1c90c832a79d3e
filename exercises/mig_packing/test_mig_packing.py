"""Visible tests for mig_packing: the statement's worked examples and three properties.

Run them with `uv run pytest exercises/mig_packing`; the grader adds hidden checks.
"""

from __future__ import annotations

from hypothesis import Phase, example, given, settings
from hypothesis import strategies as st
from mig_packing import PROFILES, Gpu, Instance, plan

_PHASES = (Phase.explicit, Phase.reuse, Phase.generate, Phase.shrink)
_MODEL = "A100-80GB"
_NAMES = sorted(PROFILES[_MODEL])


def _slices(inst: Instance) -> set[int]:
    return set(range(inst.start, inst.end))


def _check_layout(layout: list[Instance], where: str) -> None:
    """Every instance at one of its profile's starts, spanning its memory; none overlapping."""
    used: set[int] = set()
    for inst in layout:
        p = PROFILES[_MODEL][inst.profile]
        assert inst.start in p.starts, f"{where}: {inst!r} is not at one of {p.starts}"
        assert inst.end - inst.start == p.memory, f"{where}: {inst!r} does not span {p.memory}"
        assert not used & _slices(inst), f"{where}: {inst!r} overlaps another instance"
        used |= _slices(inst)


def test_example_1_counting_says_yes_placement_says_no() -> None:
    """Example 1: two 3g.40gb leave a compute slice free but no memory slice: nothing fits."""
    gpu = Gpu(_MODEL)
    placed = [gpu.place("3g.40gb"), gpu.place("3g.40gb")]
    assert placed == [Instance("3g.40gb", 4, 8), Instance("3g.40gb", 0, 4)], (
        f"two place('3g.40gb') returned {placed!r}, expected starts 4 then 0")
    assert gpu.placeable() == set(), f"placeable() is {gpu.placeable()!r}, expected set()"
    got = gpu.place("1g.10gb")
    assert got is None, f"place('1g.10gb') returned {got!r}, expected None"


def test_example_2_a_1g_goes_where_it_closes_least() -> None:
    """Example 2: a 1g on a new GPU goes to slice 6, so the 4g still fits at 0."""
    gpu = Gpu(_MODEL)
    got = gpu.place("1g.10gb")
    assert got == Instance("1g.10gb", 6, 7), f"place('1g.10gb') returned {got!r}, expected start 6"
    got = gpu.place("4g.40gb")
    assert got == Instance("4g.40gb", 0, 4), f"place('4g.40gb') returned {got!r}, expected start 0"
    want = {"1g.10gb", "1g.20gb", "2g.20gb"}
    assert gpu.placeable() == want, f"placeable() is {gpu.placeable()!r}, expected {want}"
    gpu.release(got)
    assert "4g.40gb" in gpu.placeable(), "after releasing the 4g, it is placeable again"


def test_example_3_plan_is_exact_where_largest_first_is_not() -> None:
    """Example 3: two 3g.40gb and four 2g.20gb fit on two GPUs; three 2g.20gb more do not."""
    requests = {"3g.40gb": 2, "2g.20gb": 4}
    got = plan(requests, 2, _MODEL)
    assert got is not None, f"plan({requests}, 2) returned None; a plan exists"
    assert len(got) == 2, f"plan returned {len(got)} layouts, expected one per GPU"
    for g, layout in enumerate(got):
        _check_layout(layout, f"GPU {g}")
    placed = sorted(inst.profile for layout in got for inst in layout)
    assert placed == ["2g.20gb"] * 4 + ["3g.40gb"] * 2, f"plan placed {placed}"
    more = {"3g.40gb": 2, "2g.20gb": 5}
    assert plan(more, 2, _MODEL) is None, f"plan({more}, 2) must be None"


_OPS = st.lists(st.tuples(st.booleans(), st.sampled_from(_NAMES), st.integers(0, 7)),
                max_size=20)


@settings(phases=_PHASES)
@example(ops=[(True, "1g.10gb", 0)] * 8)
@given(ops=_OPS)
def test_placed_instances_respect_the_table_and_never_overlap(
        ops: list[tuple[bool, str, int]]) -> None:
    """Whatever is placed and released, the instances held form a valid layout."""
    gpu = Gpu(_MODEL)
    for is_place, name, k in ops:
        held = gpu.instances()
        if is_place:
            got = gpu.place(name)
            if got is None:
                assert name not in gpu.placeable(), f"place({name!r}) refused a placeable profile"
        elif held:
            gpu.release(held[k % len(held)])
        _check_layout(gpu.instances(), f"after {ops}")


@settings(phases=_PHASES)
@given(names=st.lists(st.sampled_from(_NAMES), max_size=12))
def test_releasing_everything_makes_every_profile_placeable(names: list[str]) -> None:
    """After every instance is released, every profile is placeable again."""
    gpu = Gpu(_MODEL)
    for name in names:
        gpu.place(name)
    for inst in gpu.instances():
        gpu.release(inst)
    assert gpu.placeable() == set(_NAMES), f"after releasing all, placeable() is {gpu.placeable()}"


@settings(phases=_PHASES)
@given(requests=st.dictionaries(st.sampled_from(_NAMES), st.integers(0, 8), max_size=6),
       gpus=st.integers(0, 3))
def test_a_plan_holds_exactly_what_was_requested(requests: dict[str, int], gpus: int) -> None:
    """A plan, when there is one, is one valid layout per GPU with exactly the counts asked."""
    got = plan(requests, gpus, _MODEL)
    memory = sum(PROFILES[_MODEL][n].memory * c for n, c in requests.items())
    if memory > 8 * gpus:
        assert got is None, f"plan({requests}, {gpus}) needs {memory} slices yet returned {got!r}"
    if got is None:
        return
    assert len(got) == gpus, f"plan returned {len(got)} layouts for {gpus} GPUs"
    for g, layout in enumerate(got):
        _check_layout(layout, f"plan({requests}, {gpus}), GPU {g}")
    counts = {n: 0 for n in _NAMES}
    for layout in got:
        for inst in layout:
            counts[inst.profile] += 1
    assert counts == {n: requests.get(n, 0) for n in _NAMES}, f"plan placed {counts}"
