"""Shared by versioned_kv's hidden checks: store builders, a read that names its error, the
operation strategy, and a CPU-time harness."""

from __future__ import annotations

from typing import Any

from hypothesis import Phase
from hypothesis import strategies as st
from versioned_kv import CompactedError, VersionedKV

KEYS = ("a", "b", "c")
# Hypothesis's explain phase costs seconds per failing test and adds little here.
PHASES = [phase for phase in Phase if phase is not Phase.explain]

# (key, value) is a put, (key, None) a delete of the key if it is live.
OPS = st.lists(
    st.tuples(st.sampled_from(KEYS), st.one_of(st.none(), st.integers(0, 5))), max_size=25
)


def call(kv: VersionedKV[Any], method: str, *args: object) -> Any:
    """kv.method(*args); an exception it raises fails the check with the call named, so a bare
    `KeyError: 'a'` never leaves the candidate guessing which call it came from."""
    try:
        return getattr(kv, method)(*args)
    except Exception as exc:
        shown = ", ".join(map(repr, args))
        raise AssertionError(f"{method}({shown}) raised {exc!r}") from exc


def store(*writes: tuple[str, str | None]) -> VersionedKV[str]:
    """A store after `writes`, in order: (key, value) is a put, (key, None) a delete."""
    kv: VersionedKV[str] = VersionedKV()
    done: list[str] = []
    for key, value in writes:
        step = f"delete({key!r})" if value is None else f"put({key!r}, {value!r})"
        try:
            if value is None:
                kv.delete(key)
            else:
                kv.put(key, value)
        except Exception as exc:
            after = f" after {', '.join(done)}" if done else " on a new store"
            raise AssertionError(f"building the store: {step}{after} raised {exc!r}") from exc
        done.append(step)
    return kv


def read(kv: VersionedKV[Any], key: object, version: int | None = None) -> object:
    """get(key, version), or "CompactedError" / "KeyError" if it raised one of those; any other
    exception fails the check with the call named."""
    try:
        return kv.get(key, version)  # type: ignore[arg-type]  # some checks pass other keys
    except CompactedError:
        return "CompactedError"
    except KeyError:
        return "KeyError"
    except Exception as exc:
        at = "" if version is None else f", {version!r}"
        raise AssertionError(f"get({key!r}{at}) raised {exc!r}") from exc


def apply(ops: list[tuple[str, int | None]]) -> VersionedKV[int]:
    """A store after `ops` (see OPS); a delete of a key that is not live is skipped."""
    kv: VersionedKV[int] = VersionedKV()
    live: set[str] = set()
    for key, value in ops:
        if value is not None:
            kv.put(key, value)
            live.add(key)
        elif key in live:
            kv.delete(key)
            live.discard(key)
    return kv


def compaction_store() -> VersionedKV[str]:
    """a: x@1, z@4; b: y@2, deleted@5; c: w@3. Latest version 6 (a: q@6)."""
    return store(("a", "x"), ("b", "y"), ("c", "w"), ("a", "z"), ("b", None), ("a", "q"))
