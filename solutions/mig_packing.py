"""MIG packing: place GPU instances where the hardware allows them, on one GPU and on a fleet.

A MIG-capable GPU has 8 memory slices. A GPU instance of a profile occupies ``memory``
consecutive slices and may begin only at one of the profile's published ``starts``; two
instances on a GPU never share a slice. Counting free slices is not enough: where an instance
may go decides what else fits.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

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


class Gpu:
    """One GPU of ``model``, empty at first; instances are placed and released one at a time."""

    def __init__(self, model: str) -> None:
        self._table = _model_table(model)
        self.model = model
        # Invariants: `_held` maps each held instance's start to it; the held instances' slice
        # ranges are disjoint, and `_used` has exactly their slices set.
        self._held: dict[int, Instance] = {}
        self._used = 0
        self._placements = [_mask(s, p.memory) for p in self._table.values() for s in p.starts]

    def _free(self, start: int, memory: int) -> bool:
        return not self._used & _mask(start, memory)

    def _closed_by(self, mask: int) -> int:
        """How many placements, free now, an instance on ``mask`` would make unusable."""
        return sum(1 for m in self._placements if m & mask and not m & self._used)

    def place(self, profile: str, start: int | None = None) -> Instance | None:
        """Place an instance of ``profile``; ``None`` (and no change) when it cannot go in."""
        p = _profile(self._table, self.model, profile)
        if start is not None:
            if isinstance(start, bool) or not isinstance(start, int):
                raise TypeError(f"start must be an int, got {start!r}")
            if start not in p.starts:
                raise ValueError(f"{p.name} may start only at {list(p.starts)}, not at {start}")
            if not self._free(start, p.memory):
                return None
        else:
            free = [s for s in p.starts if self._free(s, p.memory)]
            if not free:
                return None
            # Keep the most placements open; the smallest start breaks ties.
            start = min(free, key=lambda s: (self._closed_by(_mask(s, p.memory)), s))
        instance = Instance(p.name, start, start + p.memory)
        self._held[start] = instance
        self._used |= _mask(start, p.memory)
        return instance

    def release(self, instance: Instance) -> None:
        """Free exactly the slices of ``instance``, which this GPU must hold."""
        if not isinstance(instance, Instance):
            raise TypeError(f"release takes an Instance, got {instance!r}")
        if self._held.get(instance.start) != instance:
            raise ValueError(f"{instance!r} is not held by this {self.model}")
        del self._held[instance.start]
        self._used &= ~_mask(instance.start, instance.end - instance.start)

    def placeable(self) -> set[str]:
        """The profiles of which one more instance fits now."""
        return {p.name for p in self._table.values()
                if any(self._free(s, p.memory) for s in p.starts)}

    def instances(self) -> list[Instance]:
        """The instances held, by start."""
        return [self._held[s] for s in sorted(self._held)]


# Every placement of these tables lies inside an aligned half ([0, 4) or [4, 8)) or quarter of
# the GPU, so a GPU holds one whole-GPU instance, or a left half and a right half. The last
# quarter, [6, 8), is "short": its slice 7 is no start, so it holds one 1-slice instance at most.
_WHOLE, _LEFT, _HALF = (8, (0,)), (4, (0,)), (4, (0, 4))
_PAIR, _QUARTER, _SINGLE = (2, (0, 2, 4)), (2, (0, 2, 4, 6)), (1, _ANY)


_Shape = tuple[int, tuple[int, ...]]  # (memory, starts): the tables' names differ, shapes do not
_Put = Callable[[int, int, _Shape], None]


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


def _halves(n: dict[_Shape, int], gpus: int,
            put: _Put) -> tuple[list[tuple[int, int]], list[int]] | None:
    """Place whole-GPU and half-GPU instances; the free quarters left, as (full, short)."""
    whole, fours = n[_WHOLE], n[_LEFT]
    halves = gpus - whole  # GPUs left for a left half and a right half each
    right3 = min(n[_HALF], halves)  # a right half holds less than a left one: use those first
    left = fours + n[_HALF] - right3  # left halves taken by 4g and the remaining 3g
    if whole > gpus or left > halves:
        return None
    full: list[tuple[int, int]] = []  # free quarters: (GPU, start); any quarter-sized instance
    short: list[int] = []  # GPUs whose quarter [6, 8) is free: slice 7 starts nothing
    for gpu in range(whole):
        put(gpu, 0, _WHOLE)
    for i, gpu in enumerate(range(whole, gpus)):
        if i < left:
            put(gpu, 0, _LEFT if i < fours else _HALF)
        else:
            full += [(gpu, 0), (gpu, 2)]
        if i < right3:
            put(gpu, 4, _HALF)
        else:
            full.append((gpu, 4))
            short.append(gpu)
    return full, short


def _quarters(n: dict[_Shape, int], full: list[tuple[int, int]], short: list[int],
              put: _Put) -> bool:
    """Place the quarter- and slice-sized instances in the free quarters, if they fit."""
    if n[_PAIR] > len(full):
        return False
    for _ in range(n[_PAIR]):
        put(*full.pop(), _PAIR)
    # A short quarter holds one 1-slice instance, a full one two: 2-slice ones go short first.
    if n[_QUARTER] > len(short) + len(full):
        return False
    for _ in range(n[_QUARTER]):
        put(*((short.pop(), 6) if short else full.pop()), _QUARTER)
    singles = [(gpu, 6) for gpu in short]
    singles += [(gpu, start + k) for gpu, start in full for k in (0, 1)]
    if n[_SINGLE] > len(singles):
        return False
    for gpu, start in singles[:n[_SINGLE]]:
        put(gpu, start, _SINGLE)
    return True


def plan(requests: Mapping[str, int], gpus: int, model: str) -> list[list[Instance]] | None:
    """A layout for each of ``gpus`` empty GPUs holding exactly the requested instances.

    ``None`` exactly when no such layouts exist.
    """
    table = _model_table(model)
    n = _counts(table, model, requests, gpus)
    name = {(p.memory, p.starts): p.name for p in table.values()}
    out: list[list[Instance]] = [[] for _ in range(gpus)]

    def put(gpu: int, start: int, shape: _Shape) -> None:
        out[gpu].append(Instance(name[shape], start, start + shape[0]))

    free = _halves(n, gpus, put)
    if free is None or not _quarters(n, *free, put):
        return None
    for layout in out:
        layout.sort(key=lambda instance: instance.start)
    return out
