"""KV-cache capacity: bytes per token from a Hugging Face ``config.json``, sequences per replica.

``kv_shape`` reads what the cache holds per token and layer; ``kv_bytes_per_token`` prices one
token of it; ``max_concurrency`` says how many sequences of a given context fit on a replica of
``tp`` GPUs once the weights and the reserve are taken out, with a paged cache of whole blocks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Attention = Literal["mha", "gqa", "mla"]

__all__ = ["Attention", "KVShape", "kv_bytes_per_token", "kv_shape",
           "max_concurrency"]

_DTYPE_BYTES: Mapping[str, int] = {"fp32": 4, "bf16": 2, "fp16": 2, "fp8": 1}
"""Bytes per cached element, by the cache dtype's name: the only names accepted."""


@dataclass(frozen=True)
class KVShape:
    """What one token puts in the KV cache of one layer, and which layers keep only a window.

    One token costs ``kv_factor * kv_heads * head_dim`` elements in each of ``layers`` layers.
    ``sliding_layers`` of them keep only the last ``window`` tokens of a sequence; ``window`` is
    None exactly when ``sliding_layers`` is 0.

    - ``attention``: ``"mla"`` for latent attention (``kv_lora_rank`` in the config), ``"mha"``
      when every query head has its own KV head, ``"gqa"`` otherwise (one KV head included).
    - ``kv_heads``: the KV heads cached per layer; 1 for latent attention.
    - ``head_dim``: elements per cached head; ``kv_lora_rank + qk_rope_head_dim`` for latent.
    - ``kv_factor``: 2 (a key and a value per head), 1 for latent attention.

    This class is complete: the tests build shapes with it and compare results to it.
    """

    attention: Attention
    layers: int
    kv_heads: int
    head_dim: int
    kv_factor: int
    sliding_layers: int = 0
    window: int | None = None


def _count(config: Mapping[str, Any], field: str) -> int:
    """``config[field]`` as a positive int; ValueError naming the field otherwise."""
    if field not in config or config[field] is None:
        raise ValueError(f"config lacks {field!r}")
    value = config[field]
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ValueError(f"config field {field!r} must be a positive integer, got {value!r}")
    return value


def _given(config: Mapping[str, Any], field: str) -> bool:
    return config.get(field) is not None


def _heads(config: Mapping[str, Any]) -> tuple[Attention, int, int, int]:
    """(attention, cached heads, elements per head, K/V factor) for one layer."""
    if _given(config, "kv_lora_rank"):
        # Latent attention caches one compressed vector per token and layer, shared by every
        # head and by keys and values alike: no heads, no factor of 2.
        return "mla", 1, _count(config, "kv_lora_rank") + _count(config, "qk_rope_head_dim"), 1
    heads = _count(config, "num_attention_heads")
    kv_heads = _count(config, "num_key_value_heads") if _given(config, "num_key_value_heads") \
        else heads
    if heads % kv_heads:
        raise ValueError(f"num_key_value_heads ({kv_heads}) must divide "
                         f"num_attention_heads ({heads})")
    if _given(config, "head_dim"):
        head_dim = _count(config, "head_dim")  # wins over hidden_size / heads (Gemma differs)
    else:
        hidden = _count(config, "hidden_size")
        if hidden % heads:
            raise ValueError(f"hidden_size ({hidden}) is not a multiple of num_attention_heads "
                             f"({heads}) and there is no head_dim")
        head_dim = hidden // heads
    return ("mha" if kv_heads == heads else "gqa"), kv_heads, head_dim, 2


def _sliding_layers(config: Mapping[str, Any], layers: int) -> int:
    """How many layers keep only the window (rules 5-8 of the statement)."""
    if _given(config, "layer_types"):
        kinds = config["layer_types"]
        if not isinstance(kinds, list | tuple) or len(kinds) != layers:
            raise ValueError(f"layer_types must list one kind per layer ({layers}), got {kinds!r}")
        unknown = sorted({str(k) for k in kinds} - {"full_attention", "sliding_attention"})
        if unknown:
            raise ValueError(f"layer_types has unknown attention kinds {unknown}")
        return sum(kind == "sliding_attention" for kind in kinds)
    if not _given(config, "sliding_window") or config.get("use_sliding_window") is False:
        return 0
    if config.get("model_type") == "gemma2":
        return (layers + 1) // 2  # layers 0, 2, 4, ... are local, the others global
    return layers


def kv_shape(config: Mapping[str, Any]) -> KVShape:
    """The KV-cache shape of the model a Hugging Face ``config.json`` describes.

    Raises:
        ValueError: a needed field is missing or not a positive integer, the heads do not
            divide (the message names the field), or ``layer_types`` names an unknown kind.
    """
    layers = _count(config, "num_hidden_layers")
    attention, kv_heads, head_dim, kv_factor = _heads(config)
    sliding = _sliding_layers(config, layers)
    window = _count(config, "sliding_window") if sliding else None
    return KVShape(attention, layers, kv_heads, head_dim, kv_factor, sliding, window)


def _dtype_bytes(dtype: str) -> int:
    try:
        return _DTYPE_BYTES[dtype]
    except (KeyError, TypeError):
        raise ValueError(f"unknown cache dtype {dtype!r}: expected one of "
                         f"{', '.join(_DTYPE_BYTES)}") from None


def kv_bytes_per_token(shape: KVShape, *, dtype: str) -> int:
    """Bytes one token adds to the whole replica's cache, every layer counted.

    Raises:
        ValueError: ``dtype`` is not one of "fp32", "bf16", "fp16" or "fp8".
    """
    return shape.layers * shape.kv_factor * shape.kv_heads * shape.head_dim * _dtype_bytes(dtype)


def _at_least(name: str, value: object, least: int = 1) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{name} must be an int, got {value!r}")
    if value < least:
        raise ValueError(f"{name} must be >= {least}, got {value}")
    return value


def max_concurrency(shape: KVShape, *, gpu_memory: int, weights: int, tp: int, context: int,
                    block_tokens: int = 16, dtype: str, reserve: float) -> int:
    """How many sequences of ``context`` tokens a replica of ``tp`` GPUs holds at once.

    Each GPU has ``gpu_memory`` bytes; ``reserve`` of it is kept back, and ``weights`` (the
    whole model's bytes) is split evenly over the ``tp`` ranks. Each rank caches
    ``max(1, kv_heads // tp)`` heads of every layer, and each sequence takes whole blocks of
    ``block_tokens`` tokens per layer. 0 when not even one sequence (or the weights) fit.

    Raises:
        ValueError: a count out of range, ``reserve`` outside [0, 1), an unknown ``dtype``,
            or ``tp`` and ``kv_heads`` such that neither divides the other.
        TypeError: a count that is not an int.
    """
    # The common case in one expression; the checks one by one only when it fails.
    if not (type(gpu_memory) is int and type(weights) is int and type(tp) is int
            and type(context) is int and type(block_tokens) is int and type(reserve) is float
            and gpu_memory > 0 and weights >= 0 and tp > 0 and context > 0 and block_tokens > 0
            and 0 <= reserve < 1):
        _at_least("gpu_memory", gpu_memory)
        _at_least("weights", weights, 0)
        _at_least("tp", tp)
        _at_least("context", context)
        _at_least("block_tokens", block_tokens)
        if isinstance(reserve, bool) or not isinstance(reserve, int | float):
            raise TypeError(f"reserve must be a number, got {reserve!r}")
        if not 0 <= reserve < 1:
            raise ValueError(f"reserve must be in [0, 1), got {reserve!r}")
    element = _dtype_bytes(dtype)
    kv_heads = shape.kv_heads
    if kv_heads % tp and tp % kv_heads:
        raise ValueError(f"tp ({tp}) and kv_heads ({kv_heads}) must divide one another")
    budget = gpu_memory - math.ceil(gpu_memory * reserve) - -(-weights // tp)
    if budget <= 0:
        return 0  # the weights and the reserve take the whole GPU
    # Whole blocks per sequence and layer: a block is never shared by two sequences.
    sliding = shape.sliding_layers
    blocks = (shape.layers - sliding) * -(-context // block_tokens)
    if sliding:
        window = context if shape.window is None else min(context, shape.window)
        blocks += sliding * -(-window // block_tokens)
    # Past one head per rank the heads are replicated, not split further.
    heads_per_rank = kv_heads // tp or 1
    block_bytes = block_tokens * shape.kv_factor * heads_per_rank * shape.head_dim * element
    return budget // (blocks * block_bytes)
