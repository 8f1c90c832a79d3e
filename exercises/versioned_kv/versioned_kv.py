"""A key-value store that answers reads at any past version.

Fill in every body below; keep the names and signatures: the grader imports them.
See README.md for the rules and worked examples.
"""

from __future__ import annotations

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
        """An empty store at version 0, nothing compacted."""
        raise NotImplementedError("VersionedKV.__init__: set up an empty store at version 0")

    @property
    def version(self) -> int:
        """The latest version: the number of puts and deletes so far; 0 when empty."""
        raise NotImplementedError("VersionedKV.version")

    def put(self, key: str, value: V) -> int:
        """Write `value` under `key` and return the new global version.

        Raises:
            TypeError: `key` is not a str, or `value` is None (None marks a delete).
        """
        raise NotImplementedError("VersionedKV.put")

    def delete(self, key: str) -> int:
        """Write a tombstone for a live `key` and return the new global version.

        Raises:
            KeyError: `key` is not live at the latest version; the version does not advance.
        """
        raise NotImplementedError("VersionedKV.delete")

    def get(self, key: str, version: int | None = None) -> V:
        """The value of the latest write to `key` at or below `version` (default: latest).

        Raises:
            TypeError: `version` is not an int (a bool is not one).
            ValueError: `version` < 0 or > the latest version (checked before the key and
                before compaction).
            CompactedError: `version` is below the compaction point, whatever the key.
            KeyError: `key` had not been written by `version`, or its latest write was a delete.
        """
        raise NotImplementedError("VersionedKV.get")

    def snapshot(self, version: int | None = None) -> dict[str, V]:
        """A new dict of exactly the keys live at `version` (default: latest) with their values.

        Raises the same TypeError, ValueError and CompactedError as `get`.
        """
        raise NotImplementedError("VersionedKV.snapshot")

    def history(self, key: str) -> list[tuple[int, V | None]]:
        """The kept writes to `key` as (version, value), oldest first; None marks a delete.

        A new list: changing it does not change the store.

        After `compact(c)` this is the latest write at or below `c` and everything after it;
        `[]` for a key never written or dropped by compaction.
        """
        raise NotImplementedError("VersionedKV.history")

    def compact(self, version: int) -> None:
        """Forget history not needed to read at `version` or later.

        Reads at versions >= `version` are unchanged; reads below it raise CompactedError.
        A `version` at or below an earlier compaction point is a no-op. Keys whose only
        kept entry is a delete at or below `version` are dropped entirely.

        Raises:
            TypeError: `version` is not an int.
            ValueError: `version` < 0 or > the latest version.
        """
        raise NotImplementedError("VersionedKV.compact")
