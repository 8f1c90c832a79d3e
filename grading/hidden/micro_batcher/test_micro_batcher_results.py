"""Hidden checks for micro_batcher, rules 2-5: results in order, a raising `process`, returned
exceptions, and results of the wrong number or kind."""

from __future__ import annotations

import re
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any

import anyio
import pytest
from micro_batcher import BatchError, MicroBatcher
from micro_batcher_helpers import (
    LONG,
    Results,
    Rig,
    anyio_backend,  # noqa: F401 (a fixture: trio on a virtual clock, and asyncio)
    expect_returned,
    leaves,
    quiesce,
    raising,
    stuck_guard,
    trio_only,
)

pytestmark = pytest.mark.anyio


@pytest.mark.points(2)
async def test_results_go_back_in_acceptance_order(anyio_backend_name: str) -> None:
    """The caller of the i-th item of a batch gets the i-th result (acceptance order)."""
    rig = Rig(size=4, wait=LONG, results=lambda items: [100 + k for k in range(len(items))])
    assert await rig.run([(0.0, [7, 3, 9, 1])], leave_early=True) == []
    assert rig.batches() == [[7, 3, 9, 1]], f"process got {rig.batches()}, expected [[7, 3, 9, 1]]"
    got = {i: rig.outcomes[i][1] for i in (7, 3, 9, 1)}
    assert got == {7: 100, 3: 101, 9: 102, 1: 103}, f"callers got {got} from [100, 101, 102, 103]"


@trio_only
@pytest.mark.points(2)
async def test_callers_started_together_are_accepted_in_the_order_of_their_calls() -> None:
    """Callers whose tasks start together are accepted in the order they call submit, even
    when the scheduler runs them in another order later."""
    calls: list[list[int]] = []

    async def process(items: list[int]) -> list[int]:
        calls.append(list(items))
        return items

    async def call(order: list[int], item: int) -> None:
        order.append(item)  # the order of the submit calls (trio may run tasks in any order)
        await batcher.submit(item)

    batcher: MicroBatcher[int, int] = MicroBatcher(process, max_batch_size=8, max_wait=LONG)
    orders: list[list[int]] = []
    with stuck_guard():
        async with anyio.create_task_group() as tg, batcher:
            for round_ in range(64):  # trio reverses a batch of ready tasks at random
                orders.append([])
                for item in range(8 * round_, 8 * round_ + 8):
                    tg.start_soon(call, orders[-1], item)
                await quiesce()
    for order, got in zip(orders, calls, strict=False):
        assert got == order, \
            f"8 callers started together called submit in the order {order}, and process got " \
            f"{got}: the items must be accepted in the order of the submit calls (accept the " \
            f"item before submit first yields, not after a checkpoint)"
    assert len(calls) == len(orders), f"64 full batches of 8 submitted, {len(calls)} dispatched"


@pytest.mark.points(3)
async def test_a_raising_batch_fails_only_its_own_callers(anyio_backend_name: str) -> None:
    """When process raises, every caller of that batch gets that exception, and only they."""
    rig = Rig(size=2, wait=LONG, concurrent=2, results=raising(2))
    rig.gate = anyio.Event()
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1, 2, 3, 4, 5)  # [0, 1] and [2, 3] at the gate, [4, 5] pending
        rig.gate.set()
    for i in (2, 3):
        kind, exc = rig.outcomes[i]
        assert kind == "raised" and isinstance(exc, KeyError) and exc.args == ("batch with 2",), \
            f"submit({i}) in the raising batch ended with {rig.outcomes[i]}, expected its KeyError"
    rig.returned([0, 1, 4, 5])


@pytest.mark.points(2)
async def test_the_batcher_keeps_serving_after_a_raising_batch(anyio_backend_name: str) -> None:
    """After a batch whose process raised, later batches are processed as usual."""
    rig = Rig(size=2, results=raising(0))
    async with rig.open() as tg:
        await rig.submit(tg, 0)
        await rig.wait_for([0])
        await rig.submit(tg, 5)
        await rig.wait_for([5])
    assert isinstance(rig.outcomes[0][1], KeyError), f"submit(0) ended with {rig.outcomes[0]}"
    rig.returned([5])


@pytest.mark.points(2)
async def test_a_returned_exception_is_raised_in_its_own_caller_only(
        anyio_backend_name: str) -> None:
    """An exception instance returned at position i is raised in the i-th caller only."""
    error = ValueError("bad item")

    def results(xs: list[int]) -> list[int | BaseException]:
        return [error if x == 1 else ValueError if x == 3 else 10 * x  # type: ignore[misc]
                for x in xs]

    rig = Rig(size=4, wait=LONG, results=results)
    assert await rig.run([(0.0, [0, 1, 2, 3])], leave_early=True) == []
    kind, got = rig.outcomes[1]
    assert kind == "raised" and type(got) is ValueError and got.args == error.args, \
        f"process returned {error!r} for item 1: submit(1) ended with {rig.outcomes[1]}"
    rig.returned([0, 2])
    assert rig.outcomes[3] == ("returned", ValueError), f"process returned the class " \
        f"ValueError (not an instance) for item 3: submit(3) ended with {rig.outcomes[3]}"


@pytest.mark.points(2)
@pytest.mark.parametrize("delta", [-1, 1], ids=["too_few", "too_many"])
async def test_wrong_result_count_fails_every_caller_with_batch_error(
        anyio_backend_name: str, delta: int) -> None:
    """Too few or too many results: every caller of that batch gets a BatchError, nobody hangs."""
    for size in (3, 1):  # a batch of one has a result count too
        rig = Rig(size=size, wait=LONG, results=lambda items: list(range(len(items) + delta)))
        left = await rig.run([(0.0, list(range(size)))], leave_early=True)
        assert left == [], f"callers {left} never got an outcome (process returned " \
                           f"{size + delta} results for {size})"
        for i in range(size):
            kind, exc = rig.outcomes[i]
            assert kind == "raised" and isinstance(exc, BatchError), f"submit({i}) ended with " \
                f"{rig.outcomes[i]}; process returned {size + delta} results for {size}"


@pytest.mark.points(2)
async def test_the_batcher_keeps_serving_after_a_wrong_result_count(
        anyio_backend_name: str) -> None:
    """After a batch with the wrong number of results, later batches are processed as usual."""
    rig = Rig(size=2, wait=LONG, concurrent=1,
              results=lambda xs: [] if 0 in xs else [10 * x for x in xs])
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1)
        await rig.wait_for([0, 1])
        await rig.submit(tg, 5, 6)
        await rig.wait_for([5, 6])
    assert isinstance(rig.outcomes[0][1], BatchError), f"submit(0) ended with {rig.outcomes[0]}"
    rig.returned([5, 6])


def _no_length(kind: str) -> Results:
    def results(items: list[int]) -> Sequence[int]:
        if 0 not in items:
            return [10 * x for x in items]
        if kind == "generator":
            return _generated(items)  # type: ignore[return-value]  # the point of the check
        return None  # type: ignore[return-value]  # the point of the check
    return results


def _generated(items: list[int]) -> Iterator[int]:
    yield from items


@pytest.mark.parametrize("kind", ["none", "generator"])
async def test_a_result_without_a_length_fails_its_callers_with_batch_error(
        anyio_backend_name: str, kind: str) -> None:
    """A process that returns no sequence (None, a generator) gives its callers a BatchError."""
    rig = Rig(size=2, wait=LONG, concurrent=1, results=_no_length(kind))
    async with rig.open() as tg:
        await rig.submit(tg, 0, 1)
        await rig.wait_for([0, 1])
        await rig.submit(tg, 5, 6)
        await rig.wait_for([5, 6])
    for i in (0, 1):
        kind_, exc = rig.outcomes[i]
        assert kind_ == "raised" and isinstance(exc, BatchError), \
            f"process returned a {kind} for [0, 1]: submit({i}) ended with {rig.outcomes[i]}"
    rig.returned([5, 6])


async def test_batch_error_names_both_counts(anyio_backend_name: str) -> None:
    """The BatchError message gives the expected and the received number of results."""
    rig = Rig(size=7, wait=LONG, results=lambda items: [0] * 4)
    await rig.run([(0.0, list(range(7)))], leave_early=True)
    message = str(rig.outcomes[0][1])
    assert re.search(r"\b7\b", message) and re.search(r"\b4\b", message), \
        f"message {message!r} should name 7 (expected) and 4 (received)"


async def _expect_seven(size: int) -> None:
    """process returns 4 results for 7 items (max_batch_size `size`, sent at exit when it is
    more than 7): any number the BatchError labels "expected" must be 7."""
    rig = Rig(size=size, wait=LONG, results=lambda items: [0] * 4)
    await rig.run([(0.0, list(range(7)))], leave_early=True)
    message = str(rig.outcomes[0][1])
    labelled = re.findall(r"\bexpected\s*[:=]?\s*(\d+)\b(?!\s*results?\s+per\b)",
                          message, re.IGNORECASE)
    assert all(number == "7" for number in labelled), \
        f"process returned 4 results for a batch of 7 (max_batch_size={size}): the " \
        f"message {message!r} says expected {', '.join(labelled)}, but 7 results were " \
        f"expected (one per item sent) and 4 received"


async def test_batch_error_labels_the_expected_count_right(anyio_backend_name: str) -> None:
    """A BatchError message that labels a number "expected" gives the number of items sent,
    not the number of results received."""
    await _expect_seven(7)  # a full batch: max_batch_size is the same number


async def test_batch_error_expects_the_batch_sent_not_max_batch_size(
        anyio_backend_name: str) -> None:
    """A BatchError for a batch sent before it filled labels as "expected" the items sent,
    not max_batch_size."""
    await _expect_seven(10)  # 7 items sent at exit, before a batch of 10 filled


@pytest.mark.points(2)
async def test_equal_items_in_one_batch_get_the_results_at_their_own_positions(
        anyio_backend_name: str) -> None:
    """Callers of equal items in one batch each get the result at their own position."""
    got: dict[int, tuple[str, object]] = {}

    async def process(items: list[int]) -> list[str]:
        return [f"{position}:{item}" for position, item in enumerate(items)]

    async def call(caller: int, item: int) -> None:
        try:
            got[caller] = ("returned", await batcher.submit(item))
        except Exception as exc:
            got[caller] = ("raised", exc)

    batcher: MicroBatcher[int, str] = MicroBatcher(process, max_batch_size=4, max_wait=LONG)
    with stuck_guard():
        async with anyio.create_task_group() as tg, batcher:
            for caller, item in enumerate([7, 3, 7, 7]):
                tg.start_soon(call, caller, item)
                await quiesce()
    want = ["0:7", "1:3", "2:7", "3:7"]
    seen = [got[c][1] if got.get(c, ("",))[0] == "returned" else got.get(c) for c in range(4)]
    assert seen == want, f"callers of 7, 3, 7, 7 got {seen} from process's {want} (one batch): " \
                         f"the i-th caller gets the i-th result, also for equal items"


async def test_results_may_come_back_as_a_tuple(anyio_backend_name: str) -> None:
    """process may return its results as any sequence, a tuple as well as a list."""
    rig = Rig(size=3, wait=LONG, results=lambda items: tuple(10 * x for x in items))
    assert await rig.run([(0.0, [4, 5, 6])], leave_early=True) == []
    assert rig.batches() == [[4, 5, 6]], f"process got {rig.batches()}, expected [[4, 5, 6]]"
    rig.returned([4, 5, 6])


class _Results(Sequence[int]):
    """A sequence of results that is neither a list nor a tuple, as a library might return."""

    def __init__(self, values: list[int]) -> None:
        self._values = values

    def __len__(self) -> int:
        return len(self._values)

    def __getitem__(self, index: Any) -> Any:
        return self._values[index]


_SEQUENCES: dict[str, Callable[[list[int]], Sequence[int]]] = {
    "deque": deque,  # a MutableSequence, so a Sequence
    "own_sequence_class": _Results,
}


@pytest.mark.parametrize("kind", list(_SEQUENCES))
async def test_results_may_come_back_as_any_sequence(anyio_backend_name: str, kind: str) -> None:
    """process may return its results as any sequence of the right length, not only a list or
    a tuple (a deque, a Sequence class of its own)."""
    make = _SEQUENCES[kind]
    rig = Rig(size=3, wait=LONG, results=lambda items: make([10 * x for x in items]))
    assert await rig.run([(0.0, [4, 5, 6])], leave_early=True) == []
    assert rig.batches() == [[4, 5, 6]], f"process got {rig.batches()}, expected [[4, 5, 6]]"
    for i in (4, 5, 6):
        expect_returned(f"submit({i}), process returning a {kind.replace('_', ' ')} of 3 results",
                        rig.outcomes.get(i), 10 * i)


def _with_falsy(items: list[int]) -> Sequence[int]:
    falsy: dict[int, object] = {1: None, 2: 0, 3: ""}
    return [falsy.get(x, 10 * x) for x in items]  # type: ignore[misc]  # None is the point


async def test_a_none_or_falsy_result_is_returned_not_raised(anyio_backend_name: str) -> None:
    """A result of None (or 0, or "") is an ordinary result: its caller gets it returned."""
    rig = Rig(size=4, wait=LONG, results=_with_falsy)
    assert await rig.run([(0.0, [0, 1, 2, 3])], leave_early=True) == []
    got = {i: rig.outcomes.get(i) for i in range(4)}
    want = {0: ("returned", 0), 1: ("returned", None), 2: ("returned", 0), 3: ("returned", "")}
    assert got == want, f"process returned [0, None, 0, ''] for [0, 1, 2, 3]: the callers got " \
                        f"{got}, expected each to return its own result"


@pytest.mark.points(2)
async def test_a_process_that_raises_when_called_fails_only_its_own_callers(
        anyio_backend_name: str) -> None:
    """A process that raises when called, before it returns its awaitable, fails only that
    batch's callers; the batcher keeps serving."""

    def process(items: list[int]) -> Awaitable[list[int]]:
        if 13 in items:
            raise KeyError("raised before any awaitable")
        return _tenfold(items)

    got: dict[int, tuple[str, object]] = {}

    async def call(item: int) -> None:
        try:
            got[item] = ("returned", await batcher.submit(item))
        except Exception as exc:
            got[item] = ("raised", exc)

    batcher: MicroBatcher[int, int] = MicroBatcher(process, max_batch_size=2, max_wait=LONG)
    escaped: BaseException | None = None
    with stuck_guard():
        try:
            async with anyio.create_task_group() as tg, batcher:
                for item in (13, 1, 2, 3):  # [13, 1] fails, [2, 3] goes after it
                    tg.start_soon(call, item)
                    await quiesce()
        except Exception as exc:
            escaped = exc
    if escaped is not None:
        raise AssertionError(f"a process that raised KeyError when called for [13, 1] broke "
                             f"the whole block: {leaves(escaped)}; only that batch's callers "
                             f"should get the KeyError") from escaped
    for item in (13, 1):
        kind, error = got.get(item, ("no outcome", None))
        assert kind == "raised" and isinstance(error, KeyError), \
            f"process raised KeyError when called for [13, 1]: submit({item}) ended with " \
            f"{got.get(item)}, expected that KeyError"
    for item in (2, 3):
        expect_returned(f"submit({item}) after the failed batch", got.get(item), 10 * item)


async def _tenfold(items: list[int]) -> list[int]:
    return [10 * x for x in items]


async def test_process_receives_a_list(anyio_backend_name: str) -> None:
    """process receives the items of its batch as a list, in acceptance order."""
    kinds: list[str] = []

    def results(items: list[int]) -> list[int]:
        kinds.append("list" if isinstance(items, list) else type(items).__name__)
        return [10 * x for x in items]

    rig = Rig(size=3, wait=LONG, results=results)
    assert await rig.run([(0.0, [4, 5, 6])], leave_early=True) == []
    assert kinds == ["list"], f"process received a {', '.join(kinds)}, expected a list " \
        f"(the API: process takes list[T]; it may sort it or use any list method)"
    assert rig.batches() == [[4, 5, 6]], f"process got {rig.batches()}, expected [[4, 5, 6]]"
    rig.returned([4, 5, 6])


async def test_process_may_change_the_list_it_receives(anyio_backend_name: str) -> None:
    """process owns the list it receives: emptying it does not change what its callers get."""

    def results(items: list[int]) -> list[int]:
        out = []
        while items:  # consumes its input, as a process that moves items to a device may
            out.append(10 * items.pop(0))
        return out

    rig = Rig(size=3, wait=LONG, results=results)
    assert await rig.run([(0.0, [4, 5, 6])], leave_early=True) == []
    for i in (4, 5, 6):
        outcome = rig.outcomes.get(i)
        if outcome != ("returned", 10 * i):
            message = f"process emptied the list it received and returned one result per item " \
                      f"(in order): submit({i}) ended with {outcome}, expected to return " \
                      f"{10 * i}; the number of items is the batch's, whatever process does " \
                      f"with its list"
            if outcome is not None and isinstance(outcome[1], BaseException):
                raise AssertionError(message) from outcome[1]
            raise AssertionError(message)
