"""Hidden checks for micro_batcher, rule 10: bad arguments raise an error naming them."""

from __future__ import annotations

import enum
import math
import re
from collections.abc import Generator
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from micro_batcher import MicroBatcher
from micro_batcher_helpers import (
    LONG,
    anyio_backend,  # noqa: F401 (a fixture: trio on a virtual clock, and asyncio)
    noop,
    stuck_guard,
)

pytestmark = pytest.mark.category("bad_input")


@pytest.mark.parametrize(("kwargs", "error"), [
    ({"max_batch_size": 0}, ValueError), ({"max_batch_size": -3}, ValueError),
    ({"max_concurrent_batches": 0}, ValueError), ({"max_wait": -0.5}, ValueError),
    ({"max_wait": math.nan}, ValueError), ({"max_wait": math.inf}, ValueError),
    ({"max_batch_size": 2.0}, TypeError), ({"max_batch_size": True}, TypeError),
    ({"max_concurrent_batches": "2"}, TypeError), ({"max_wait": "0.1"}, TypeError),
    ({"max_wait": None}, TypeError), ({"max_wait": True}, TypeError),
    ({"max_wait": 10**400}, ValueError),
], ids=lambda v: v.__name__ if isinstance(v, type) else "-".join(f"{k}={v[k]!r}" for k in v))
def test_bad_arguments_are_refused(kwargs: dict[str, object], error: type[Exception]) -> None:
    """A bad max_batch_size, max_wait or max_concurrent_batches raises an error naming it."""
    args: dict[str, Any] = {"max_batch_size": 4, "max_wait": 0.1, **kwargs}
    with pytest.raises(error, match=rf"\b{next(iter(kwargs))}\b"):
        MicroBatcher(noop, **args)


@pytest.mark.parametrize("value", [True, 1.0])
def test_a_max_concurrent_batches_equal_to_1_but_no_int_is_refused(value: object) -> None:
    """max_concurrent_batches=True or 1.0 (equal to the default 1, not an int) raises TypeError."""
    with pytest.raises(TypeError, match=r"\bmax_concurrent_batches\b"):
        MicroBatcher(noop, max_batch_size=4, max_wait=0.1,
                     max_concurrent_batches=value)  # type: ignore[arg-type]


def test_a_process_that_is_not_callable_is_refused() -> None:
    """A process that is not callable raises TypeError naming process, before anything runs."""
    with pytest.raises(TypeError, match=r"\bprocess\b"):
        MicroBatcher(42, max_batch_size=4, max_wait=0.1)  # type: ignore[arg-type]


def test_several_bad_arguments_raise_for_one_of_them() -> None:
    """With several bad arguments, the error names one of them (any one)."""
    cases: list[tuple[dict[str, Any], list[str]]] = [
        ({"max_batch_size": 0, "max_wait": "x"}, ["max_batch_size", "max_wait"]),
        ({"max_batch_size": 1.5, "max_wait": -1.0, "max_concurrent_batches": 0},
         ["max_batch_size", "max_wait", "max_concurrent_batches"]),
        ({"max_batch_size": 2, "max_wait": math.nan, "max_concurrent_batches": True},
         ["max_wait", "max_concurrent_batches"]),
    ]
    for kwargs, bad in cases:
        with pytest.raises((TypeError, ValueError)) as caught:
            MicroBatcher(noop, **kwargs)
        named = [name for name in bad if re.search(rf"\b{name}\b", str(caught.value))]
        assert named, f"MicroBatcher(process, **{kwargs}) raised {caught.value!r}, which names " \
                      f"none of the bad arguments {bad}"


def test_boundary_arguments_are_accepted() -> None:
    """max_batch_size=1, max_wait=0 (int or float) and max_concurrent_batches=1 are valid."""
    for wait in (0, 0.0, 2):
        MicroBatcher(noop, max_batch_size=1, max_wait=wait, max_concurrent_batches=1)


class _Size(enum.IntEnum):
    SMALL = 4


class _Seconds(float):  # a float subclass, as numpy.float64 is
    pass


def test_int_and_float_subclasses_are_accepted() -> None:
    """An int subclass (an IntEnum) for the counts and a float subclass for max_wait are valid."""
    try:
        MicroBatcher(noop, max_batch_size=_Size.SMALL, max_wait=_Seconds(0.01),
                     max_concurrent_batches=_Size.SMALL)
    except (TypeError, ValueError) as exc:
        raise AssertionError(
            f"MicroBatcher(process, max_batch_size=<IntEnum 4>, max_wait=<float subclass 0.01>, "
            f"max_concurrent_batches=<IntEnum 4>) raised {exc!r}: an IntEnum is an int and a "
            f"float subclass is a float (only bool is refused)") from exc


def test_an_int_max_wait_that_a_float_holds_is_accepted() -> None:
    """An int max_wait past 2**53 that float() converts (2**60, 2**1000) is a valid window."""
    for wait in (2**60, 2**1000):
        try:
            MicroBatcher(noop, max_batch_size=4, max_wait=wait)
        except (TypeError, ValueError) as exc:
            raise AssertionError(
                f"MicroBatcher(process, max_batch_size=4, max_wait=2**{wait.bit_length() - 1}) "
                f"raised {exc!r}: float() converts that int, so it is a valid (very long) "
                f"window; only an int that float() cannot convert (10**400) is too large") from exc


def test_a_max_wait_of_another_number_type_is_refused() -> None:
    """A max_wait that is a number but no int or float (a Fraction, a Decimal) raises TypeError."""
    for wait in (Fraction(1, 100), Decimal("0.01")):
        raised: Exception | None = None
        try:
            MicroBatcher(noop, max_batch_size=4, max_wait=wait)  # type: ignore[arg-type]
        except Exception as exc:  # any other outcome is reported below
            raised = exc
        assert isinstance(raised, TypeError) and re.search(r"\bmax_wait\b", str(raised)), \
            f"MicroBatcher(process, max_batch_size=4, max_wait={wait!r}) " \
            f"{'was accepted' if raised is None else f'raised {raised!r}'}, expected a " \
            f"TypeError naming max_wait: it must be an int or a float (or a subclass of one)"


async def _double(items: list[int]) -> list[int]:
    return [2 * x for x in items]


class _Doubler:
    """A process that is an object with an async __call__, as a model wrapper often is."""

    async def __call__(self, items: list[int]) -> list[int]:
        return await _double(items)


@pytest.mark.anyio
async def test_any_callable_returning_an_awaitable_is_a_valid_process(
        anyio_backend_name: str) -> None:
    """A process may be any callable that returns an awaitable: a lambda, an object."""
    kinds: dict[str, Any] = {
        "a lambda returning a coroutine": lambda items: _double(items),  # noqa: PLW0108 (a plain function is the point)
        "an object with an async __call__": _Doubler(),
    }
    for kind, process in kinds.items():
        got: object = "no result (it hung)"
        try:
            batcher: MicroBatcher[int, int] = MicroBatcher(process, max_batch_size=1,
                                                           max_wait=LONG)
            with stuck_guard():
                async with batcher:
                    got = await batcher.submit(21)
        except Exception as exc:
            raise AssertionError(f"with process = {kind}, MicroBatcher(...) and submit(21) "
                                 f"raised {exc!r}: any callable that returns an awaitable is "
                                 f"a valid process") from exc
        assert got == 42, f"with process = {kind} doubling its items, submit(21) returned " \
                          f"{got!r}, expected 42"


class _Awaitable:
    """An awaitable that is no coroutine, as an asyncio Future or a framework's handle is."""

    def __init__(self, items: list[int]) -> None:
        self.items = items

    def __await__(self) -> Generator[Any, None, list[int]]:
        return _double(self.items).__await__()


@pytest.mark.anyio
async def test_a_process_may_return_any_awaitable_not_only_a_coroutine(
        anyio_backend_name: str) -> None:
    """A process may return any awaitable, not only a coroutine: an object with __await__."""
    batcher: MicroBatcher[int, int] = MicroBatcher(_Awaitable, max_batch_size=1, max_wait=LONG)
    got: object = "no result (it hung)"
    try:
        with stuck_guard():
            async with batcher:
                got = await batcher.submit(21)
    except Exception as exc:
        raise AssertionError(f"process returned an awaitable that is no coroutine (an object "
                             f"with __await__, as an asyncio Future is), and submit(21) raised "
                             f"{exc!r}: await whatever process returns") from exc
    assert got == 42, f"process returned an object with __await__ that doubles its items: " \
                      f"submit(21) returned {got!r}, expected 42 (await what process returns)"
