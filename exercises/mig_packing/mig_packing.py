"""MIG packing: place GPU instances where the hardware allows them, on one GPU and on a fleet.

A MIG-capable GPU has 8 memory slices. A GPU instance of a profile occupies ``memory``
consecutive slices and may begin only at one of the profile's published ``starts``; two
instances on a GPU never share a slice. Counting free slices is not enough: where an instance
may go decides what else fits.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["MEMORY_SLICES", "PROFILES", "Gpu", "Instance", "Profile", "plan"]

MEMORY_SLICES = 8


@dataclass(frozen=True)
class Profile:
    """A GPU instance profile: ``memory`` of the 8 memory slices, beginning at one of ``starts``.

    ``compute`` is its share of the 7 compute (SM) slices; it never decides where it fits.
    """

    name: str
    compute: int
    memory: int
    starts: tuple[int, ...]


@dataclass(frozen=True)
class Instance:
    """A GPU instance of ``profile`` on memory slices ``[start, end)``; compared by value."""

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


class Gpu:
    """One GPU of ``model``, empty at first; instances are placed and released one at a time.

    Invariant: the instances held never share a memory slice, and each begins at one of its
    profile's ``starts``.

    Raises:
        ValueError: ``model`` is not a key of ``PROFILES`` (the message names it).
        TypeError: ``model`` is not a str (the checks also accept ValueError there).
    """

    model: str

    def __init__(self, model: str) -> None:
        raise NotImplementedError("Gpu is not written yet")

    def place(self, profile: str, start: int | None = None) -> Instance | None:
        """Place one instance of ``profile`` and return it; ``None``, changing nothing, if it
        cannot go in.

        With ``start``, the instance goes exactly there, or nowhere (``None``) if a slice it
        needs is taken. Without, it goes at the free start that closes the fewest free
        placements of the model's table (rule 4); the smallest such start wins a tie.

        Raises:
            ValueError: ``profile`` is not a profile of this GPU's model, or ``start`` is not
                one of the profile's starts (the message names the value).
            TypeError: ``start`` is not an int (``True`` included), or ``profile`` is not a
                str (the checks also accept ValueError for the profile).

        >>> gpu = Gpu("A100-80GB")
        >>> gpu.place("1g.10gb")
        Instance(profile='1g.10gb', start=6, end=7)
        """
        raise NotImplementedError("Gpu.place is not written yet")

    def release(self, instance: Instance) -> None:
        """Free exactly the slices of ``instance``, which this GPU must hold.

        Raises:
            ValueError: this GPU holds no instance equal to ``instance`` (released already,
                never placed here, or another profile on the same slices); nothing changes.
            TypeError: ``instance`` is not an ``Instance`` (the checks also accept
                ValueError there). An equal instance (``==``) is the held one.
        """
        raise NotImplementedError("Gpu.release is not written yet")

    def placeable(self) -> set[str]:
        """The names of the profiles of which one more instance fits now.

        >>> gpu = Gpu("A100-80GB")
        >>> _ = gpu.place("3g.40gb"), gpu.place("3g.40gb")
        >>> gpu.placeable()
        set()
        """
        raise NotImplementedError("Gpu.placeable is not written yet")

    def instances(self) -> list[Instance]:
        """The instances this GPU holds, by start."""
        raise NotImplementedError("Gpu.instances is not written yet")


def plan(requests: Mapping[str, int], gpus: int, model: str) -> list[list[Instance]] | None:
    """Layouts for ``gpus`` empty GPUs of ``model`` that hold exactly the requested instances.

    ``requests`` maps profile names to counts. The result has one list per GPU (``[]`` for an
    idle one), each a valid layout sorted by start, and holds exactly ``requests[name]``
    instances of each profile. ``None`` when no such layouts exist: the answer is exact, so a
    plan that a cleverer assignment would find must be found.

    Raises:
        ValueError: unknown ``model``, a profile not of ``model`` (whatever its count), a
            negative count or ``gpus < 0`` (the message names the value).
        TypeError: a count or ``gpus`` that is not an int, or ``requests`` not a mapping.

    >>> plan({"3g.40gb": 2, "2g.20gb": 4}, 2, "A100-80GB") is not None
    True
    """
    raise NotImplementedError("plan is not written yet")
