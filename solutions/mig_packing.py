"""MIG packing: place GPU instances where the hardware allows them, on one GPU and on a fleet.

A MIG-capable GPU has 8 memory slices. A GPU instance of a profile occupies ``memory``
consecutive slices and may begin only at one of the profile's published ``starts``; two
instances on a GPU never share a slice. Counting free slices is not enough: where an instance
may go decides what else fits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cache

__all__ = ["MEMORY_SLICES", "PROFILES", "Gpu", "Instance", "Profile", "plan"]

MEMORY_SLICES = 8


@dataclass(frozen=True)
class Profile:
    """A GPU instance profile: ``memory`` slices from one of ``starts``; ``compute`` of 7."""

    name: str
    compute: int
    memory: int
    starts: tuple[int, ...]


@dataclass(frozen=True)
class Instance:
    """A GPU instance of ``profile`` on memory slices ``[start, end)``."""

    profile: str
    start: int
    end: int


def _table(*profiles: Profile) -> Mapping[str, Profile]:
    return {p.name: p for p in profiles}


_ANY = (0, 1, 2, 3, 4, 5, 6)

# NVIDIA MIG User Guide: "Supported MIG Profiles" (names, compute and memory fractions) and
# `nvidia-smi mig -lgipp` in "Getting Started with MIG" (placements, as {starts}:slices).
PROFILES: Mapping[str, Mapping[str, Profile]] = {
    "A100-40GB": _table(
        Profile("1g.5gb", 1, 1, _ANY),
        Profile("1g.10gb", 1, 2, (0, 2, 4, 6)),
        Profile("2g.10gb", 2, 2, (0, 2, 4)),
        Profile("3g.20gb", 3, 4, (0, 4)),
        Profile("4g.20gb", 4, 4, (0,)),
        Profile("7g.40gb", 7, 8, (0,)),
    ),
    "A100-80GB": _table(
        Profile("1g.10gb", 1, 1, _ANY),
        Profile("1g.20gb", 1, 2, (0, 2, 4, 6)),
        Profile("2g.20gb", 2, 2, (0, 2, 4)),
        Profile("3g.40gb", 3, 4, (0, 4)),
        Profile("4g.40gb", 4, 4, (0,)),
        Profile("7g.80gb", 7, 8, (0,)),
    ),
    "H100-80GB": _table(
        Profile("1g.10gb", 1, 1, _ANY),
        Profile("1g.20gb", 1, 2, (0, 2, 4, 6)),
        Profile("2g.20gb", 2, 2, (0, 2, 4)),
        Profile("3g.40gb", 3, 4, (0, 4)),
        Profile("4g.40gb", 4, 4, (0,)),
        Profile("7g.80gb", 7, 8, (0,)),
    ),
}


def _mask(start: int, memory: int) -> int:
    return ((1 << memory) - 1) << start


def _model_table(model: object) -> Mapping[str, Profile]:
    if not isinstance(model, str):
        raise TypeError(f"model must be a str, got {model!r}")
    if model not in PROFILES:
        raise ValueError(f"unknown GPU model {model!r}; known: {sorted(PROFILES)}")
    return PROFILES[model]


def _profile(table: Mapping[str, Profile], model: str, name: object) -> Profile:
    if not isinstance(name, str):
        raise TypeError(f"profile must be a str, got {name!r}")
    if name not in table:
        raise ValueError(f"profile {name!r} is not a {model} profile; known: {sorted(table)}")
    return table[name]


# What rule 4 picks and what fits depend only on the model, the occupied slices (one byte) and
# the profile: each is worked out once, on first use, so place and placeable cost a lookup.


@cache
def _placements(model: str) -> tuple[int, ...]:
    """The slice mask of every placement of the model's table: a profile at one of its starts."""
    return tuple(_mask(s, p.memory) for p in PROFILES[model].values() for s in p.starts)


@cache
def _rule4_start(model: str, used: int, name: str) -> int | None:
    """The free start of ``name`` closing the fewest free placements, the smallest on a tie;
    None when no start of it is free."""
    p = PROFILES[model][name]
    free = [s for s in p.starts if not used & _mask(s, p.memory)]
    if not free:
        return None
    open_now = [m for m in _placements(model) if not m & used]
    return min(free, key=lambda s: (sum(1 for m in open_now if m & _mask(s, p.memory)), s))


@cache
def _placeable(model: str, used: int) -> frozenset[str]:
    """The profiles with a start whose slices are all free."""
    return frozenset(p.name for p in PROFILES[model].values()
                     if any(not used & _mask(s, p.memory) for s in p.starts))


class Gpu:
    """One GPU of ``model``, empty at first; instances are placed and released one at a time."""

    def __init__(self, model: str) -> None:
        self._table = _model_table(model)
        self.model = model
        # Invariants: `_held` maps each held instance's start to it; the held instances' slice
        # ranges are disjoint, and `_used` has exactly their slices set.
        self._held: dict[int, Instance] = {}
        self._used = 0

    def place(self, profile: str, start: int | None = None) -> Instance | None:
        """Place an instance of ``profile``; ``None`` (and no change) when it cannot go in."""
        p = _profile(self._table, self.model, profile)
        if start is None:
            start = _rule4_start(self.model, self._used, p.name)
            if start is None:
                return None
        else:
            if isinstance(start, bool) or not isinstance(start, int):
                raise TypeError(f"start must be an int, got {start!r}")
            if start not in p.starts:
                raise ValueError(f"{p.name} may start only at {list(p.starts)}, not at {start}")
            if self._used & _mask(start, p.memory):
                return None
        instance = Instance(p.name, start, start + p.memory)
        self._held[start] = instance
        self._used |= _mask(start, p.memory)
        return instance

    def release(self, instance: Instance) -> None:
        """Free exactly the slices of ``instance``, which this GPU must hold."""
        if not isinstance(instance, Instance):
            raise TypeError(f"release takes an Instance, got {instance!r}")
        held = self._held.get(instance.start)
        if held != instance:
            raise ValueError(f"{instance!r} is not held by this {self.model}")
        del self._held[held.start]  # an equal instance may carry 0.0 for 0: use the held one
        self._used &= ~_mask(held.start, held.end - held.start)

    def placeable(self) -> set[str]:
        """The profiles of which one more instance fits now."""
        return set(_placeable(self.model, self._used))

    def instances(self) -> list[Instance]:
        """The instances held, by start."""
        return [self._held[s] for s in sorted(self._held)]


# Every placement of these tables lies inside an aligned half ([0, 4) or [4, 8)) or quarter of
# the GPU, so a GPU holds one whole-GPU instance, or a left half and a right half. The last
# quarter, [6, 8), is "short": its slice 7 is no start, so it holds one 1-slice instance at most.
_WHOLE, _LEFT, _HALF = (8, (0,)), (4, (0,)), (4, (0, 4))
_PAIR, _QUARTER, _SINGLE = (2, (0, 2, 4)), (2, (0, 2, 4, 6)), (1, _ANY)

_Shape = tuple[int, tuple[int, ...]]  # (memory, starts): the tables' names differ, shapes do not


def _counts(table: Mapping[str, Profile], model: str, requests: Mapping[str, int],
            gpus: int) -> dict[_Shape, int]:
    """Requested counts by shape; every argument checked."""
    if isinstance(gpus, bool) or not isinstance(gpus, int):
        raise TypeError(f"gpus must be an int, got {gpus!r}")
    if gpus < 0:
        raise ValueError(f"gpus must be >= 0, got {gpus}")
    if not isinstance(requests, Mapping):
        raise TypeError(f"requests must be a mapping of profile to count, got {requests!r}")
    shapes = {(p.memory, p.starts): 0 for p in table.values()}
    for name, count in requests.items():
        p = _profile(table, model, name)
        if isinstance(count, bool) or not isinstance(count, int):
            raise TypeError(f"count for {name!r} must be an int, got {count!r}")
        if count < 0:
            raise ValueError(f"count for {name!r} must be >= 0, got {count}")
        shapes[p.memory, p.starts] += count
    return shapes


def _quotas(n: dict[_Shape, int], gpus: int) -> dict[str, int] | None:
    """How many of each kind of place the fleet fills, or None when the requests cannot fit.

    Two exchange arguments make this exact. A left half holds whatever a right half holds, so
    a 3g takes a right half while one is free (a 4g has only left halves). A 2-slice 1g costs a
    short quarter one 1-slice place and a full quarter two, so it takes short quarters first.
    """
    whole = n[_WHOLE]
    halves = gpus - whole  # GPUs with a left and a right half
    right3 = min(n[_HALF], halves)
    left3 = n[_HALF] - right3
    if halves < 0 or n[_LEFT] + left3 > halves:
        return None
    short = halves - right3  # right halves left as a full quarter and the short one
    full = 2 * (halves - n[_LEFT] - left3) + short
    quarter_short = min(n[_QUARTER], short)
    quarter_full = n[_QUARTER] - quarter_short
    free_full = full - n[_PAIR] - quarter_full  # full quarters left for 1-slice instances
    if free_full < 0 or n[_SINGLE] > 2 * free_full + short - quarter_short:
        return None
    return {"whole": whole, "left4": n[_LEFT], "left3": left3, "right3": right3,
            "pair": n[_PAIR], "quarter_full": quarter_full, "quarter_short": quarter_short,
            "single": n[_SINGLE]}


def _next_layout(todo: dict[str, int],
                 make: Callable[[_Shape, int], Instance]) -> tuple[list[Instance], dict[str, int]]:
    """One GPU's layout, sorted by start, filled from ``todo``; and what it takes from ``todo``.

    The GPU after it gets the same layout as long as every count it takes from lasts.
    """
    took: dict[str, int] = {}

    def take(kind: str) -> bool:
        if todo[kind] > took.get(kind, 0):
            took[kind] = took.get(kind, 0) + 1
            return True
        return False

    if take("whole"):
        return [make(_WHOLE, 0)], took
    layout, quarters = [], []
    if take("left4"):
        layout.append(make(_LEFT, 0))
    elif take("left3"):
        layout.append(make(_HALF, 0))
    else:
        quarters += [0, 2]
    right3 = take("right3")
    if not right3:
        quarters.append(4)
    for q in quarters:
        if take("pair"):
            layout.append(make(_PAIR, q))
        elif take("quarter_full"):
            layout.append(make(_QUARTER, q))
        else:
            layout += [make(_SINGLE, s) for s in (q, q + 1) if take("single")]
    if right3:
        layout.append(make(_HALF, 4))
    elif take("quarter_short"):
        layout.append(make(_QUARTER, 6))
    elif take("single"):
        layout.append(make(_SINGLE, 6))
    return layout, took


@cache
def _instance(profile: str, start: int, end: int) -> Instance:
    """Instances are frozen values, so one object serves every plan that holds it."""
    return Instance(profile, start, end)


def plan(requests: Mapping[str, int], gpus: int, model: str) -> list[list[Instance]] | None:
    """A layout for each of ``gpus`` empty GPUs holding exactly the requested instances.

    ``None`` exactly when no such layouts exist.
    """
    table = _model_table(model)
    n = _counts(table, model, requests, gpus)
    todo = _quotas(n, gpus)
    if todo is None:
        return None
    name = {(p.memory, p.starts): p.name for p in table.values()}

    def make(shape: _Shape, start: int) -> Instance:
        return _instance(name[shape], start, start + shape[0])

    # A fleet has only a few distinct layouts: build each once and copy it along its stretch.
    out: list[list[Instance]] = []
    while len(out) < gpus:
        layout, took = _next_layout(todo, make)
        times = min([gpus - len(out)] + [todo[kind] // k for kind, k in took.items()])
        for kind, k in took.items():
            todo[kind] -= k * times
        out += [layout.copy() for _ in range(times)]
    return out
