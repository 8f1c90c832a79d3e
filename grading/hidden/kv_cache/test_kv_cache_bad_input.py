"""Hidden checks for kv_cache: configs and arguments that must be refused, never guessed."""

from __future__ import annotations

import json
from decimal import Decimal
from fractions import Fraction
from typing import Any

import pytest
from kv_cache import KVShape, kv_bytes_per_token, kv_shape, max_concurrency
from kv_cache_helpers import DEEPSEEK_V3, GEMMA2_27B, LLAMA_31_8B, MISTRAL_7B_V01, REAL

pytestmark = pytest.mark.category("bad_input")
LLAMA_70B = REAL["Llama-3.1-70B"][1]


def _refused(config: dict[str, Any], field: str, what: str) -> None:
    """kv_shape(config) raises ValueError whose message names `field`."""
    try:
        got = kv_shape(config)
    except ValueError as err:
        # The failure message must show the call, which pytest.raises cannot.
        assert field in str(err), (  # noqa: PT017
            f"kv_shape({what}) raised {err!r}: the message should name the field {field!r}")
    else:
        pytest.fail(f"kv_shape({what}) returned {got}, expected ValueError naming {field!r}")


def _without(config: dict[str, Any], field: str) -> dict[str, Any]:
    return {k: v for k, v in config.items() if k != field}


@pytest.mark.parametrize(("model", "field"), [
    ("Llama-3.1-8B", "num_hidden_layers"),
    ("Llama-3.1-8B", "num_attention_heads"),
    ("Llama-3.1-8B", "hidden_size"),
    ("DeepSeek-V3", "qk_rope_head_dim"),
    ("DeepSeek-V3", "num_hidden_layers"),
])
def test_a_missing_field_raises_value_error_naming_it(model: str, field: str) -> None:
    """A config without a field the rules need raises ValueError naming the field."""
    _refused(_without(REAL[model][0], field), field, f"{model} without {field}")


@pytest.mark.parametrize(("model", "field"), [
    ("Llama-3.1-8B", "num_hidden_layers"),
    ("Llama-3.1-8B", "num_key_value_heads"),
    ("Llama-3.1-8B", "num_attention_heads"),
    ("Gemma-2-27B", "head_dim"),
    ("DeepSeek-V3", "kv_lora_rank"),
    ("Mistral-7B-v0.1", "sliding_window"),
])
def test_a_zero_or_negative_count_raises_value_error_naming_it(model: str, field: str) -> None:
    """A count of 0 or less (layers, heads, head_dim, latent rank, window) raises ValueError."""
    for bad in (0, -8):
        _refused({**REAL[model][0], field: bad}, field, f"{model} with {field}={bad}")


def test_a_count_that_is_not_an_integer_raises_value_error() -> None:
    """A count given as a string, a float or a bool raises ValueError naming it."""
    for bad in ("32", 32.0, True):
        _refused({**LLAMA_31_8B, "num_hidden_layers": bad}, "num_hidden_layers",
                 f"Llama-3.1-8B with num_hidden_layers={bad!r}")


def test_heads_not_dividing_hidden_size_raise_without_head_dim() -> None:
    """With no head_dim, a hidden_size that the heads do not divide raises ValueError."""
    config = {**LLAMA_31_8B, "hidden_size": 4100}
    _refused(config, "hidden_size", "Llama-3.1-8B with hidden_size 4100 (32 heads)")
    fine = {**config, "head_dim": 128}
    assert kv_shape(fine).head_dim == 128, "with head_dim given, hidden_size 4100 is fine"


def test_a_latent_config_without_qk_rope_head_dim_raises_beside_head_dim() -> None:
    """A latent config needs qk_rope_head_dim: without it, a head_dim (as re-saved configs carry)
    does not stand in for it, and kv_shape raises ValueError naming qk_rope_head_dim."""
    resaved = {**_without(DEEPSEEK_V3, "qk_rope_head_dim"), "head_dim": 64}
    _refused(resaved, "qk_rope_head_dim", "DeepSeek-V3 with head_dim 64 and no qk_rope_head_dim")


def test_kv_heads_not_dividing_query_heads_raise() -> None:
    """num_key_value_heads that does not divide num_attention_heads raises ValueError."""
    _refused({**LLAMA_31_8B, "num_key_value_heads": 5}, "num_key_value_heads",
             "32 query heads, 5 KV heads")


def test_more_kv_heads_than_attention_heads_raise() -> None:
    """num_key_value_heads must divide num_attention_heads: 16 KV heads over 8 attention heads
    raise ValueError (the heads are not a tp that may divide either way)."""
    config = {"num_hidden_layers": 2, "num_attention_heads": 8, "num_key_value_heads": 16,
              "head_dim": 128}
    _refused(config, "num_key_value_heads", "8 attention heads, 16 KV heads")


@pytest.mark.category("edge_cases")
def test_kv_heads_that_do_not_divide_the_heads_past_float_precision_raise() -> None:
    """num_key_value_heads must divide num_attention_heads in exact integer arithmetic: 4 KV heads
    do not divide 2**54 + 2 attention heads (a float division says they do), and do divide
    2**54 + 4."""
    base = {"num_hidden_layers": 1, "num_key_value_heads": 4, "head_dim": 1}
    _refused({**base, "num_attention_heads": 2**54 + 2}, "num_key_value_heads",
             "2**54 + 2 attention heads and 4 KV heads")
    fine = {**base, "num_attention_heads": 2**54 + 4}
    want = KVShape("gqa", 1, 4, 1, 2)
    got = kv_shape(fine)
    assert got == want, f"kv_shape({fine}) returned {got}, expected {want}: 4 divides 2**54 + 4"


def test_a_layer_types_longer_than_the_layers_raises() -> None:
    """layer_types has exactly one entry per layer: a longer list raises ValueError naming
    layer_types, never cut to num_hidden_layers."""
    kinds = ["full_attention", "full_attention", "sliding_attention"]
    config = {"num_hidden_layers": 2, "num_attention_heads": 4, "head_dim": 8,
              "sliding_window": 16, "layer_types": kinds}
    _refused(config, "layer_types", f"2 layers and layer_types {kinds}")


def test_layer_types_entries_that_are_not_strings_raise_value_error() -> None:
    """A layer_types entry that is not one of the two kinds (a dict, a list, null) raises
    ValueError naming layer_types, never another error."""
    for entry in ({"type": "full_attention"}, ["full_attention"], None):
        config = {"num_hidden_layers": 1, "num_attention_heads": 1, "head_dim": 8,
                  "layer_types": [entry]}
        _refused(config, "layer_types", f"1 layer and layer_types [{entry!r}]")


@pytest.mark.points(2)
def test_an_unknown_attention_kind_raises() -> None:
    """layer_types with a kind other than full or sliding attention, or of the wrong length,
    raises ValueError naming layer_types."""
    kinds = ["sliding_attention", "full_attention", "linear_attention", "full_attention"]
    config = {**MISTRAL_7B_V01, "num_hidden_layers": 4, "layer_types": kinds}
    _refused(config, "layer_types", f"a config with layer_types {kinds}")
    short = {**GEMMA2_27B, "layer_types": ["full_attention"] * 45}
    _refused(short, "layer_types", "46 layers and 45 layer_types")


def test_sliding_layer_types_without_a_window_raise() -> None:
    """layer_types with sliding layers and no sliding_window (absent or null) raises ValueError
    naming sliding_window: a sliding layer needs its window."""
    kinds = ["sliding_attention", "full_attention"]
    config = {**LLAMA_31_8B, "num_hidden_layers": 2, "layer_types": kinds}
    _refused(config, "sliding_window", f"layer_types {kinds} and no sliding_window")
    _refused({**config, "sliding_window": None}, "sliding_window",
             f"layer_types {kinds} and sliding_window null")


def test_layer_types_that_are_not_a_list_raise() -> None:
    """layer_types that is not a list (a string, a number, a mapping) raises ValueError naming
    layer_types."""
    for bad in ("sliding_attention", 2, {"0": "sliding_attention", "1": "full_attention"}):
        config = {**MISTRAL_7B_V01, "num_hidden_layers": 2, "layer_types": bad}
        _refused(config, "layer_types", f"a 2-layer config with layer_types {bad!r}")


def test_an_empty_layer_types_list_raises() -> None:
    """An empty layer_types list is a list of the wrong length: ValueError naming layer_types,
    never a fall back to the other window rules."""
    _refused({**MISTRAL_7B_V01, "layer_types": []}, "layer_types",
             "Mistral-7B-v0.1 (32 layers) with layer_types []")


def test_a_kv_lora_rank_of_false_raises() -> None:
    """kv_lora_rank: false is a latent rank that is not a positive int: ValueError naming it,
    never a silent fall back to standard attention."""
    _refused({**DEEPSEEK_V3, "kv_lora_rank": False}, "kv_lora_rank",
             "DeepSeek-V3 with kv_lora_rank false")


def test_a_kv_lora_rank_that_is_not_an_int_raises() -> None:
    """A kv_lora_rank of the wrong type (512.0, "512") is a latent rank that is not a positive
    int: ValueError naming it, never a fall back to standard attention."""
    for bad in (512.0, "512"):
        _refused({**DEEPSEEK_V3, "kv_lora_rank": bad}, "kv_lora_rank",
                 f"DeepSeek-V3 with kv_lora_rank={bad!r}")


def test_a_config_that_is_not_a_mapping_raises() -> None:
    """A config that is not a mapping (a list, the JSON text, None, a number) raises TypeError or
    ValueError (either is accepted), never another error."""
    bad: Any
    for bad in ([("num_hidden_layers", 32)], '{"num_hidden_layers": 32}', None, 32):
        with pytest.raises((TypeError, ValueError)):
            kv_shape(bad)


def test_a_list_of_key_value_pairs_is_not_a_config() -> None:
    """A list of (key, value) pairs is not a mapping, even the pairs of a whole published config:
    TypeError or ValueError (either is accepted), never a shape read as if it were the dict."""
    for model in ("Llama-3.1-8B", "DeepSeek-V3"):
        pairs: Any = list(REAL[model][0].items())
        try:
            got = kv_shape(pairs)
        except (TypeError, ValueError):
            continue
        pytest.fail(f"kv_shape(list({model} config.items())) returned {got}, expected TypeError "
                    "or ValueError: a list of pairs is not a mapping, and dict() of it is not "
                    "what was passed")


def test_the_json_text_of_a_config_is_refused_not_parsed() -> None:
    """The JSON text of a published config (a str, or bytes as read from the file) is not a
    mapping: TypeError or ValueError (either is accepted), never parsed into a shape."""
    text = json.dumps(LLAMA_31_8B)
    config: Any
    for kind, config in [("str", text), ("bytes", text.encode())]:
        try:
            got = kv_shape(config)
        except (TypeError, ValueError):
            continue
        pytest.fail(f"kv_shape(json.dumps(Llama-3.1-8B) as {kind}) returned {got}, expected "
                    "TypeError or ValueError: kv_shape takes the parsed config, not its text")


def test_gpt2_field_names_do_not_stand_in_for_missing_fields() -> None:
    """GPT-2's n_layer, n_head and n_embd are keys the rules do not name: a config missing
    num_hidden_layers, num_attention_heads or hidden_size raises ValueError naming it, whatever
    GPT-2-style key stands beside."""
    for field, alias, value in [("num_hidden_layers", "n_layer", 32),
                                ("num_attention_heads", "n_head", 32),
                                ("hidden_size", "n_embd", 4096)]:
        config = {**_without(LLAMA_31_8B, field), alias: value}
        _refused(config, field, f"Llama-3.1-8B without {field} and with {alias}={value}")


def test_a_used_window_that_is_not_a_positive_int_raises_on_every_path() -> None:
    """A sliding_window that some layer uses must be a positive int whichever rule slides the
    layers: every layer (Mistral), every other one (gemma2) or layer_types; 4096.0, true,
    "4096" and 0 raise ValueError naming sliding_window."""
    kinds = ["sliding_attention", "full_attention"]
    paths = [("Mistral-7B-v0.1", MISTRAL_7B_V01), ("Gemma-2-27B", GEMMA2_27B),
             (f"Llama-3.1-8B cut to 2 layers with layer_types {kinds}",
              {**LLAMA_31_8B, "num_hidden_layers": 2, "layer_types": kinds})]
    for what, config in paths:
        for bad in (4096.0, True, "4096", 0):
            _refused({**config, "sliding_window": bad}, "sliding_window",
                     f"{what} with sliding_window={bad!r}")


def test_an_unknown_dtype_is_refused_everywhere() -> None:
    """A dtype other than fp32, bf16, fp16 or fp8 raises ValueError: never a guess."""
    shape = kv_shape(DEEPSEEK_V3)
    for dtype in ("bfloat16", "int8", "fp4", "", "float"):
        with pytest.raises(ValueError):
            kv_bytes_per_token(shape, dtype=dtype)
        with pytest.raises(ValueError):
            max_concurrency(shape, gpu_memory=80 * 2**30, weights=0, tp=1, context=1,
                            dtype=dtype, reserve=0.0)


def _dtype_refused(dtype: str) -> KVShape:
    """kv_bytes_per_token(Llama-3.1-8B, dtype=dtype) raises ValueError; returns that shape."""
    shape = kv_shape(LLAMA_31_8B)
    try:
        got = kv_bytes_per_token(shape, dtype=dtype)
    except ValueError:
        return shape
    pytest.fail(f"kv_bytes_per_token(Llama-3.1-8B, dtype={dtype!r}) returned {got}, "
                "expected ValueError: only fp32, bf16, fp16 and fp8 are dtypes")


def test_a_dtype_that_only_starts_like_a_known_one_is_refused() -> None:
    """Only the four names of rule 10 are dtypes: vLLM's "fp8_e4m3" and "fp8_e5m2" raise
    ValueError, never a guess from the prefix."""
    for dtype in ("fp8_e4m3", "fp8_e5m2", "bf16_x", "fp32x"):
        _dtype_refused(dtype)


def test_a_dtype_in_another_case_is_refused() -> None:
    """dtype names are exact: "BF16", "FP8" or "Fp16" raise ValueError, never a guess."""
    for dtype in ("BF16", "FP8", "Fp16", "FP32"):
        shape = _dtype_refused(dtype)
        with pytest.raises(ValueError):
            max_concurrency(shape, gpu_memory=80 * 2**30, weights=0, tp=1, context=1,
                            dtype=dtype, reserve=0.0)


def test_a_dtype_with_surrounding_whitespace_is_refused() -> None:
    """dtype names are exact: "bf16 ", " fp8" or "fp16\\n" raise ValueError in kv_bytes_per_token
    and max_concurrency, never stripped into one of the four names."""
    for dtype in ("bf16 ", " fp8", "fp16\n", "\tfp32"):
        shape = _dtype_refused(dtype)
        try:
            got = max_concurrency(shape, gpu_memory=80 * 2**30, weights=0, tp=1, context=1,
                                  dtype=dtype, reserve=0.0)
        except ValueError:
            continue
        pytest.fail(f"max_concurrency(Llama-3.1-8B, dtype={dtype!r}, ...) returned {got}, "
                    "expected ValueError: only fp32, bf16, fp16 and fp8, exactly, are dtypes")


_OK: dict[str, Any] = {"gpu_memory": 80 * 2**30, "weights": 0, "tp": 2, "context": 4096,
                       "block_tokens": 16, "dtype": "bf16", "reserve": 0.1}


@pytest.mark.parametrize(("name", "bad"), [
    ("gpu_memory", 0), ("weights", -1), ("tp", 0), ("context", 0), ("block_tokens", 0),
    ("reserve", 1.0), ("reserve", -0.1),
])
def test_an_argument_out_of_range_raises_value_error(name: str, bad: object) -> None:
    """max_concurrency refuses a count below its bound or a reserve outside [0, 1)."""
    with pytest.raises(ValueError):
        max_concurrency(LLAMA_70B, **{**_OK, name: bad})


def test_an_argument_of_the_wrong_type_raises() -> None:
    """A count that is not an int (a float, a str, a bool) raises TypeError (or ValueError)."""
    for name, bad in [("tp", 2.0), ("context", "4096"), ("block_tokens", True),
                      ("gpu_memory", 8.0e10), ("weights", 1.5e9), ("context", 4096.0)]:
        with pytest.raises((TypeError, ValueError)):
            max_concurrency(LLAMA_70B, **{**_OK, name: bad})


def test_a_bool_reserve_raises() -> None:
    """reserve=False or True is not a number of this API: TypeError (or ValueError)."""
    for bad in (False, True):
        with pytest.raises((TypeError, ValueError)):
            max_concurrency(LLAMA_70B, **{**_OK, "reserve": bad})


def test_a_reserve_that_is_not_an_int_or_a_float_raises() -> None:
    """reserve is an int or a float: a Fraction, a Decimal or a str raises TypeError (or
    ValueError), never a result."""
    for bad in (Fraction(1, 10), Decimal("0.1"), "0.1"):
        try:
            got = max_concurrency(LLAMA_70B, **{**_OK, "reserve": bad})
        except (TypeError, ValueError):
            pass
        else:
            pytest.fail(f"max_concurrency(Llama-3.1-70B, reserve={bad!r}) returned {got}, "
                        "expected TypeError: reserve must be an int or a float")


def test_a_wrong_type_raises_even_right_after_an_equal_good_call() -> None:
    """A count or reserve of the wrong type raises TypeError (or ValueError) even right after a
    call with equal good values: 1280.0, True and False are refused, never answered as 1280, 1
    and 0 were."""
    tiny = KVShape("gqa", 1, 1, 1, 2)  # 4 bytes a token in bf16
    good: dict[str, Any] = {"gpu_memory": 1280, "weights": 0, "tp": 1, "context": 17,
                            "block_tokens": 16, "dtype": "bf16", "reserve": 0}
    for name, bad in [("gpu_memory", 1280.0), ("tp", True), ("reserve", False),
                      ("weights", False), ("context", 17.0), ("block_tokens", 16.0)]:
        first = max_concurrency(tiny, **good)
        assert first == 10, f"max_concurrency({tiny}, {good}) returned {first}, expected 10"
        try:
            got = max_concurrency(tiny, **{**good, name: bad})
        except (TypeError, ValueError):
            continue
        pytest.fail(f"max_concurrency({tiny}, ...) with {name}={good[name]!r} returned {first}, "
                    f"then the same call with {name}={bad!r} returned {got}: expected TypeError, "
                    f"a {type(bad).__name__} is not a {name} whatever was asked before")


def test_tp_that_does_not_divide_the_kv_heads_raises() -> None:
    """tp and kv_heads must divide one another: 8 KV heads cannot be split over 3 or 12 ranks."""
    for tp in (3, 6, 12):
        with pytest.raises(ValueError):
            max_concurrency(LLAMA_70B, **{**_OK, "tp": tp})
    for tp in (1, 2, 4, 8, 16, 64):
        max_concurrency(LLAMA_70B, **{**_OK, "tp": tp})  # all fine
    max_concurrency(KVShape("mla", 61, 1, 576, 1), **{**_OK, "tp": 3})  # one latent: any tp


def _refused_beside_huge_weights(name: str, bad: object) -> None:
    """max_concurrency with weights no GPU holds and `name` bad raises ValueError, not 0."""
    huge = {**_OK, "weights": 10**15}  # far more than 2 GPUs of 80 GiB hold
    try:
        got = max_concurrency(LLAMA_70B, **{**huge, name: bad})
    except ValueError:
        return
    pytest.fail(f"max_concurrency(Llama-3.1-70B, weights=10**15, {name}={bad!r}) returned "
                f"{got}, expected ValueError: the {name} is bad whatever the weights")


def test_bad_arguments_raise_even_when_the_weights_do_not_fit() -> None:
    """An unknown dtype, or a tp that does not divide the KV heads, raises ValueError even when
    the weights leave no room: a bad argument is an error, not 0 sequences."""
    for name, bad in [("dtype", "int8"), ("tp", 3)]:
        _refused_beside_huge_weights(name, bad)


def test_a_bad_count_raises_even_when_the_weights_do_not_fit() -> None:
    """A context or block_tokens below 1 raises ValueError even when the weights leave no room:
    a bad argument is an error, not 0 sequences."""
    for name, bad in [("context", 0), ("block_tokens", 0), ("context", -1), ("gpu_memory", 0)]:
        _refused_beside_huge_weights(name, bad)
