"""Oracles and data for the mig_packing checks: the published tables, brute force, validity.

Nothing here imports the submission's logic; only its data classes are used to build inputs.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from functools import cache

import kata_measure
from hypothesis import strategies as st

# The published placements (NVIDIA MIG User Guide, `nvidia-smi mig -lgipp`, with the names of
# "Supported MIG Profiles"): name -> (memory slices, starts). `+me` profiles are left out.
_GEOMETRY = ((1, (0, 1, 2, 3, 4, 5, 6)), (2, (0, 2, 4, 6)), (2, (0, 2, 4)), (4, (0, 4)),
             (4, (0,)), (8, (0,)))
_NAMES = {
    "A100-40GB": ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
    "A100-80GB": ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "H100-80GB": ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
}
TABLE: dict[str, dict[str, tuple[int, tuple[int, ...]]]] = {
    model: dict(zip(names, _GEOMETRY, strict=True)) for model, names in _NAMES.items()}
MODELS = sorted(TABLE)
NAMES = {model: list(names) for model, names in _NAMES.items()}


def mask(start: int, memory: int) -> int:
    return ((1 << memory) - 1) << start


def placements(model: str) -> list[tuple[str, int, int]]:
    """Every (profile, start, slice mask) of the model's table."""
    return [(name, s, mask(s, mem)) for name, (mem, starts) in TABLE[model].items()
            for s in starts]


def rule_start(model: str, used: int, profile: str) -> int | None:
    """Rule 4 by brute force: the free start closing the fewest free placements, smallest
    first; None when no start is free."""
    mem, starts = TABLE[model][profile]
    free = [s for s in starts if not used & mask(s, mem)]
    if not free:
        return None

    def closed(s: int) -> int:
        return sum(1 for _, _, m in placements(model) if m & mask(s, mem) and not m & used)

    return min(free, key=lambda s: (closed(s), s))


def placeable_oracle(model: str, used: int) -> set[str]:
    return {name for name, _, m in placements(model) if not m & used}


@cache
def single_layouts() -> frozenset[tuple[int, ...]]:
    """Count vectors (in NAMES order, the same geometry for every model) of every set of
    non-overlapping placements on one GPU."""
    names, found = NAMES["A100-80GB"], set()
    pl = placements("A100-80GB")

    def walk(i: int, used: int, counts: list[int]) -> None:
        found.add(tuple(counts))
        for j in range(i, len(pl)):
            name, _, m = pl[j]
            if not used & m:
                k = names.index(name)
                counts[k] += 1
                walk(j + 1, used | m, counts)
                counts[k] -= 1

    walk(0, 0, [0] * len(names))
    return frozenset(found)


@cache
def fleet_layouts(gpus: int) -> frozenset[tuple[int, ...]]:
    """Count vectors that some layouts of ``gpus`` GPUs hold exactly (brute force)."""
    if gpus == 0:
        return frozenset({(0,) * len(_GEOMETRY)})
    return frozenset(tuple(a + b for a, b in zip(x, y, strict=True))
                     for x in fleet_layouts(gpus - 1) for y in single_layouts())


def feasible(model: str, requests: Mapping[str, int], gpus: int) -> bool:
    vector = tuple(requests.get(name, 0) for name in NAMES[model])
    return vector in fleet_layouts(gpus)


def check_plan(result: object, requests: Mapping[str, int], gpus: int, model: str) -> None:
    """Assert that ``result`` is a valid plan for exactly ``requests`` on ``gpus`` GPUs."""
    call = f"plan({dict(requests)}, {gpus}, {model!r})"
    assert isinstance(result, list), f"{call} returned {result!r}, expected a list of layouts"
    assert len(result) == gpus, f"{call} returned {len(result)} layouts, expected one per GPU"
    counts = dict.fromkeys(NAMES[model], 0)
    for g, layout in enumerate(result):
        assert isinstance(layout, list), f"{call}: GPU {g}'s layout {layout!r} is not a list"
        used = 0
        for inst in layout:
            assert inst.profile in TABLE[model], (
                f"{call}: GPU {g} holds {inst!r}, not a {model} profile")
            mem, starts = TABLE[model][inst.profile]
            assert inst.start in starts, (
                f"{call}: GPU {g} holds {inst!r}; {inst.profile} may start only at {list(starts)}")
            assert inst.end == inst.start + mem, (
                f"{call}: GPU {g} holds {inst!r}; {inst.profile} spans {mem} slices")
            assert not used & mask(inst.start, mem), f"{call}: GPU {g}'s {inst!r} overlaps another"
            used |= mask(inst.start, mem)
            counts[inst.profile] += 1
        starts_seen = [inst.start for inst in layout]
        assert starts_seen == sorted(starts_seen), f"{call}: GPU {g}'s layout is not by start"
    wanted = {name: requests.get(name, 0) for name in NAMES[model]}
    assert counts == wanted, f"{call} placed {counts}, expected exactly {wanted}"


@cache
def near_the_edge(model: str, gpus: int) -> st.SearchStrategy[dict[str, int]]:
    """Requests that some layouts of ``gpus`` GPUs hold, often with one instance added: about
    half feasible, and the rest just over the edge."""
    names = NAMES[model]
    vectors = sorted(fleet_layouts(gpus), key=lambda v: (-sum(v), v))

    def build(vector: tuple[int, ...], extra: int | None) -> dict[str, int]:
        counts = dict(zip(names, vector, strict=True))
        if extra is not None:
            counts[names[extra]] += 1
        return {name: c for name, c in counts.items() if c}

    return st.builds(build, st.sampled_from(vectors),
                     st.none() | st.integers(0, len(names) - 1))


# ---------------------------------------------------------------- timing

def growth(small: Callable[[], object], large: Callable[[], object], limit: float) -> float:
    """Best CPU time of `large` over best of `small` (kata_measure.growth)."""
    return kata_measure.growth(small, large, limit)


# A fleet mix: each GPU holds one of these layouts (profile index in NAMES order, start).
_MIX = (
    ((0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (0, 5), (0, 6)),  # seven 1-slice
    ((2, 0), (0, 2), (0, 3), (0, 4), (0, 5), (0, 6)),          # a 2g and five 1-slice
    ((0, 0), (0, 1), (0, 2), (0, 3), (3, 4)),                  # four 1-slice and a 3g
    ((4, 0), (0, 4), (0, 5), (1, 6)),                          # a 4g, two 1-slice, a 1g 2-slice
    ((2, 0), (2, 2), (2, 4), (1, 6)),                          # three 2g and a 1g 2-slice
    ((3, 0), (3, 4)),                                          # two 3g
    ((5, 0),),                                                 # a 7g
)


def fleet_requests(model: str, gpus: int) -> dict[str, int]:
    """The counts that ``gpus`` GPUs in the mix above hold: feasible by construction, tight."""
    counts = dict.fromkeys(NAMES[model], 0)
    for g in range(gpus):
        for k, _ in _MIX[g % len(_MIX)]:
            counts[NAMES[model][k]] += 1
    return counts
