"""A key-value store that answers reads at any past version (reference solution).

Each key keeps an ascending list of the global versions at which it was written and a
parallel list of the values written (`None` marks a delete). A read at version `v` is a
binary search for the last write at or below `v`: O(log h) in the key's history length.
"""

from __future__ import annotations

from array import array
from bisect import bisect_right
from typing import Generic, TypeVar

V = TypeVar("V")


class CompactedError(LookupError):
    """The version asked for is below the compaction point: its history was forgotten."""


class VersionedKV(Generic[V]):
    """A multi-version key-value store with one global version counter.

    >>> kv: VersionedKV[str] = VersionedKV()
    >>> kv.put("a", "x"), kv.put("b", "y"), kv.put("a", "z")
    (1, 2, 3)
    >>> kv.get("a", 2)
    'x'
    """

    def __init__(self) -> None:
        # Invariants:
        # - 0 <= self._floor <= self._version; self._version counts every put and delete.
        # - for each key, _versions[key] is strictly ascending, non-empty, every entry
        #   <= self._version, and _values[key] has the same length (None = a delete).
        # - at most one entry of a key is <= self._floor (compaction keeps only the latest).
        # - no key holds only a tombstone at or below self._floor (compaction drops it).
        self._version = 0
        self._floor = 0
        # array('q'), not list: a binary search over a million entries then reads one block of
        # machine integers instead of chasing a pointer to an int object at every probe.
        self._versions: dict[str, array[int]] = {}
        self._values: dict[str, list[V | None]] = {}

    @property
    def version(self) -> int:
        """The latest version: the number of puts and deletes so far; 0 when empty."""
        return self._version

    def put(self, key: str, value: V) -> int:
        """Write `value` under `key` and return the new global version.

        Raises:
            TypeError: `key` is not a str, or `value` is None (None marks a delete).
        """
        if not isinstance(key, str):
            raise TypeError(f"key must be a str, got {key!r}")
        if value is None:
            raise TypeError(f"value must not be None (None marks a delete), key {key!r}")
        return self._append(key, value)

    def delete(self, key: str) -> int:
        """Write a tombstone for a live `key` and return the new global version.

        Raises:
            KeyError: `key` is not live at the latest version; the version does not advance.
        """
        values = self._values.get(key)
        if not values or values[-1] is None:
            raise KeyError(key)
        return self._append(key, None)

    def get(self, key: str, version: int | None = None) -> V:
        """The value of the latest write to `key` at or below `version` (default: latest).

        Raises:
            TypeError: `version` is not an int (a bool is not one).
            ValueError: `version` < 0 or > the latest version (checked before the key and
                before compaction).
            CompactedError: `version` is below the compaction point, whatever the key.
            KeyError: `key` had not been written by `version`, or its latest write was a delete.
        """
        at = self._readable(version)
        value = self._at(key, at)
        if value is None:
            raise KeyError(key)
        return value

    def snapshot(self, version: int | None = None) -> dict[str, V]:
        """A new dict of exactly the keys live at `version` (default: latest) with their values.

        Raises the same TypeError, ValueError and CompactedError as `get`.
        """
        at = self._readable(version)
        live = ((key, self._at(key, at)) for key in self._versions)
        return {key: value for key, value in live if value is not None}

    def history(self, key: str) -> list[tuple[int, V | None]]:
        """The kept writes to `key` as (version, value), oldest first; None marks a delete.

        A new list: changing it does not change the store.

        After `compact(c)` this is the latest write at or below `c` and everything after it;
        `[]` for a key never written or dropped by compaction.
        """
        return list(zip(self._versions.get(key, []), self._values.get(key, []), strict=True))

    def compact(self, version: int) -> None:
        """Forget history not needed to read at `version` or later.

        Reads at versions >= `version` are unchanged; reads below it raise CompactedError.
        A `version` at or below an earlier compaction point is a no-op. Keys whose only
        kept entry is a delete at or below `version` are dropped entirely.

        Raises:
            TypeError: `version` is not an int.
            ValueError: `version` < 0 or > the latest version.
        """
        self._check_range(version, "compact")
        if version <= self._floor:
            return
        self._floor = version
        for key in list(self._versions):
            versions, values = self._versions[key], self._values[key]
            keep = bisect_right(versions, version) - 1  # the latest write <= version
            if keep > 0:
                del versions[:keep]
                del values[:keep]
            if len(values) == 1 and values[0] is None and versions[0] <= version:
                del self._versions[key], self._values[key]

    def _append(self, key: str, value: V | None) -> int:
        self._version += 1
        self._versions.setdefault(key, array("q")).append(self._version)
        self._values.setdefault(key, []).append(value)
        return self._version

    def _at(self, key: str, version: int) -> V | None:
        """The value `key` holds at `version`; None when absent or deleted."""
        versions = self._versions.get(key)
        if versions is None:
            return None
        # bisect_right: a write exactly at `version` is included (bisect_left would skip it).
        i = bisect_right(versions, version) - 1
        return self._values[key][i] if i >= 0 else None

    def _readable(self, version: int | None) -> int:
        if version is None:
            return self._version
        self._check_range(version, "version")
        if version < self._floor:
            raise CompactedError(f"version {version} was compacted (compacted up to {self._floor})")
        return version

    def _check_range(self, version: int, name: str) -> None:
        if isinstance(version, bool) or not isinstance(version, int):
            raise TypeError(f"{name} must be an int, got {version!r}")
        if not 0 <= version <= self._version:
            raise ValueError(f"{name} must be between 0 and {self._version}, got {version}")
