"""Hidden checks for kv_cache: argument values no JSON config makes, refused all the same."""

from __future__ import annotations

from typing import Any

import pytest
from kv_cache import kv_bytes_per_token, kv_shape, max_concurrency
from kv_cache_helpers import LLAMA_31_8B, REAL

pytestmark = pytest.mark.category("bad_input")
LLAMA_70B = REAL["Llama-3.1-70B"][1]
_OK: dict[str, Any] = {"gpu_memory": 80 * 2**30, "weights": 0, "tp": 2, "context": 4096,
                       "block_tokens": 16, "dtype": "bf16", "reserve": 0.1}


def test_a_dtype_given_as_bytes_is_refused() -> None:
    """A dtype that is not a str, b"bf16" or bytearray(b"fp8") included, raises TypeError or
    ValueError (either is accepted) in kv_bytes_per_token and max_concurrency, never decoded."""
    shape = kv_shape(LLAMA_31_8B)
    bad: Any
    for bad in (b"bf16", bytearray(b"fp8")):
        for call in ("kv_bytes_per_token", "max_concurrency"):
            try:
                if call == "kv_bytes_per_token":
                    got = kv_bytes_per_token(shape, dtype=bad)
                else:
                    got = max_concurrency(shape, gpu_memory=80 * 2**30, weights=0, tp=1,
                                          context=1, dtype=bad, reserve=0.0)
            except (TypeError, ValueError):
                continue
            pytest.fail(f"{call}(Llama-3.1-8B, dtype={bad!r}, ...) returned {got}, expected "
                        "TypeError or ValueError: a dtype is a str, never bytes to decode")


def _reserve_refused(bad: object, shown: str, why: str) -> None:
    """max_concurrency(Llama-3.1-70B, reserve=bad) raises ValueError."""
    try:
        got = max_concurrency(LLAMA_70B, **{**_OK, "reserve": bad})
    except ValueError:
        return
    except Exception as err:  # the candidate sees what was raised instead
        pytest.fail(f"max_concurrency(Llama-3.1-70B, reserve={shown}) raised {err!r}, expected "
                    f"ValueError: {why}")
    pytest.fail(f"max_concurrency(Llama-3.1-70B, reserve={shown}) returned {got}, expected "
                f"ValueError: {why}")


def test_a_nan_reserve_raises_value_error() -> None:
    """A reserve of NaN is outside [0, 1): ValueError, never taken as no reserve."""
    _reserve_refused(float("nan"), "nan", "NaN is not in [0, 1)")


def test_an_int_reserve_too_large_for_a_float_raises_value_error() -> None:
    """An int reserve of any size outside [0, 1), 10**400 or -10**400 included, raises
    ValueError, never an OverflowError from turning it into a float."""
    for bad, shown in [(10**400, "10**400"), (-(10**400), "-10**400")]:
        _reserve_refused(bad, shown, "an int reserve outside [0, 1) is a ValueError, however "
                         "large")
