"""Hidden checks for versioned_kv: the store against a model of full snapshots under any
sequence of operations, and the same reads with writes to unrelated keys interleaved."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings, stateful
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from versioned_kv import VersionedKV
from versioned_kv_helpers import KEYS, OPS, PHASES, apply, call, read


class _Model(RuleBasedStateMachine):
    """The store against full snapshots per version and per-key histories, compacted eagerly."""

    def __init__(self) -> None:
        super().__init__()
        self.kv: VersionedKV[int] = VersionedKV()
        self.snaps: list[dict[str, int]] = [{}]
        self.hist: dict[str, list[tuple[int, int | None]]] = {}
        self.floor = 0

    def _write(self, key: str, value: int | None, got: int) -> None:
        snap = {k: v for k, v in self.snaps[-1].items() if k != key}
        self.snaps.append(snap if value is None else {**snap, key: value})
        self.hist.setdefault(key, []).append((len(self.snaps) - 1, value))
        assert got == len(self.snaps) - 1, f"a write returned {got}, expected {len(self.snaps) - 1}"

    @rule(key=st.sampled_from(KEYS), value=st.integers(0, 3))
    def put(self, key: str, value: int) -> None:
        self._write(key, value, self.kv.put(key, value))

    @rule(key=st.sampled_from(KEYS))
    def delete(self, key: str) -> None:
        if key in self.snaps[-1]:
            self._write(key, None, self.kv.delete(key))
        else:
            with pytest.raises(KeyError):
                self.kv.delete(key)

    @precondition(lambda self: len(self.snaps) > 1)
    @rule(pick=st.integers(0, 1000))
    def compact(self, pick: int) -> None:
        c = pick % len(self.snaps)
        self.kv.compact(c)
        if c <= self.floor:
            return
        self.floor = c
        for key, entries in list(self.hist.items()):
            old = [i for i, (v, _) in enumerate(entries) if v <= c]
            kept = entries[old[-1] :] if old else entries
            self.hist[key] = kept
            if len(kept) == 1 and kept[0][1] is None:
                del self.hist[key]

    @rule(key=st.sampled_from((*KEYS, "z")), pick=st.integers(0, 1000))
    def get(self, key: str, pick: int) -> None:
        v = pick % len(self.snaps)
        want = "CompactedError" if v < self.floor else self.snaps[v].get(key, "KeyError")
        got = read(self.kv, key, v)
        assert got == want, f"get({key!r}, {v}) gave {got!r}, expected {want!r}"

    @invariant()
    def reads_and_history_match(self) -> None:
        assert self.kv.version == len(self.snaps) - 1, f"version is {self.kv.version}"
        v = len(self.snaps) - 1 - (len(self.snaps) - 1 - self.floor) // 2
        assert self.kv.snapshot(v) == self.snaps[v], f"snapshot({v}) is {self.kv.snapshot(v)}"
        got = {key: self.kv.history(key) for key in KEYS}
        want = {key: self.hist.get(key, []) for key in KEYS}
        assert got == want, f"histories are {got}, expected {want}"


@pytest.mark.timeout(60)  # room to shrink a failing example: a wrong answer fails, never times out
@pytest.mark.points(3)
def test_any_sequence_of_operations_matches_the_model() -> None:
    """Any sequence of puts, deletes, compactions and reads matches a model of snapshots."""
    stateful.run_state_machine_as_test(
        _Model,
        settings=settings(
            max_examples=30, stateful_step_count=30, report_multiple_bugs=False, phases=PHASES
        ),
    )


# --- rule 3 at every scale: writes to unrelated keys change no read ------------------------

_WORKED = [("a", 1), ("b", 2), ("a", 3), ("a", None), ("b", 4)]  # the statement's table
_GAPS = st.lists(st.integers(0, 3), min_size=26, max_size=26)


def _interleaved(
    ops: list[tuple[str, int | None]], gaps: list[int]
) -> tuple[VersionedKV[int], list[int]]:
    """The store of `ops` with gaps[i] writes to unrelated keys before op i (and gaps[len(ops)]
    after the last), and for each of its versions the version of `apply(ops)` it corresponds
    to: the number of writes of `ops` made by then."""
    kv: VersionedKV[int] = VersionedKV()
    live: set[str] = set()
    mapping = [0]
    done = 0

    def unrelated(n: int) -> None:
        for j in range(n):
            key = f"u{j % 2}"
            if key in live and j % 3 == 2:
                call(kv, "delete", key)
                live.discard(key)
            else:
                call(kv, "put", key, j)
                live.add(key)
            mapping.append(done)

    for i, (key, value) in enumerate(ops):
        unrelated(gaps[i] if i < len(gaps) else 0)
        if value is None and key not in live:
            continue
        if value is None:
            call(kv, "delete", key)
            live.discard(key)
        else:
            call(kv, "put", key, value)
            live.add(key)
        done += 1
        mapping.append(done)
    unrelated(gaps[len(ops)] if len(ops) < len(gaps) else 0)
    return kv, mapping


@pytest.mark.timeout(60)  # room to shrink a failing example: a wrong answer fails, never times out
@pytest.mark.points(3)
@settings(max_examples=60, report_multiple_bugs=False, phases=PHASES)
@example(ops=_WORKED, gaps=[1] * 26, pick=0)  # one unrelated write before every write
@example(ops=_WORKED, gaps=[1] * 26, pick=4)  # ... and compaction at the delete of `a`
@example(ops=_WORKED, gaps=[3] * 26, pick=5)  # a run of them, compaction at the last write
@example(ops=_WORKED, gaps=[0] * 5 + [3] + [0] * 20, pick=0)  # only after the last write
@example(ops=_WORKED, gaps=[3] + [0] * 25, pick=1)  # only before the first write
@example(ops=[("a", 0)], gaps=[0, 3] + [0] * 24, pick=1)  # compaction below unrelated writes
@given(ops=OPS, gaps=_GAPS, pick=st.integers(0, 100))
def test_writes_to_unrelated_keys_change_no_read(
    ops: list[tuple[str, int | None]], gaps: list[int], pick: int
) -> None:
    """Writes to other keys interleaved anywhere change no read, snapshot or history of the
    original keys at the corresponding versions, compacted or not."""
    plain = apply(ops)
    kv, mapping = _interleaved(ops, gaps)
    c = pick % (plain.version + 1)
    call(plain, "compact", c)
    c2 = mapping.index(c)  # the first version of `kv` that corresponds to c
    call(kv, "compact", c2)
    for v in range(kv.version + 1):
        at = mapping[v]
        got = {key: read(kv, key, v) for key in KEYS}
        want = {key: read(plain, key, at) for key in KEYS}
        assert got == want, (
            f"with writes to other keys interleaved, reads at {v} gave {got}; without them, "
            f"at the corresponding version {at}: {want}"
        )
        if v >= c2:
            snap = {k: x for k, x in call(kv, "snapshot", v).items() if k in KEYS}
            assert snap == call(plain, "snapshot", at), (
                f"snapshot({v}) of the original keys is {snap}, without the other writes "
                f"snapshot({at}) is {plain.snapshot(at)}"
            )
    for key in KEYS:
        got_history = [(mapping[v], x) for v, x in call(kv, "history", key)]
        assert got_history == plain.history(key), (
            f"history({key!r}) with versions mapped back is {got_history}, without the other "
            f"writes {plain.history(key)}"
        )
