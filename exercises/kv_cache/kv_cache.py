"""KV-cache capacity: bytes per token from a Hugging Face ``config.json``, sequences per replica.

``kv_shape`` reads what the cache holds per token and layer; ``kv_bytes_per_token`` prices one
token of it; ``max_concurrency`` says how many sequences of a given context fit on a replica of
``tp`` GPUs once the weights and the reserve are taken out, with a paged cache of whole blocks.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

Attention = Literal["mha", "gqa", "mla"]

__all__ = ["Attention", "KVShape", "kv_bytes_per_token", "kv_shape", "max_concurrency"]


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


def kv_shape(config: Mapping[str, Any]) -> KVShape:
    """The KV-cache shape of the model a Hugging Face ``config.json`` describes.

    Keys the rules do not name are ignored.

    Raises:
        ValueError: a needed field is missing or not a positive integer, the heads do not
            divide (the message names the field), or ``layer_types`` names an unknown kind.
        TypeError or ValueError (either): ``config`` is not a mapping.

    >>> kv_shape({"num_hidden_layers": 32, "num_attention_heads": 32,
    ...           "num_key_value_heads": 8, "hidden_size": 4096})
    KVShape(attention='gqa', layers=32, kv_heads=8, head_dim=128, kv_factor=2, sliding_layers=0, window=None)
    """  # noqa: E501
    raise NotImplementedError("kv_shape is not written yet")


def kv_bytes_per_token(shape: KVShape, *, dtype: str) -> int:
    """Bytes one token adds to the whole replica's cache, every layer counted.

    ``dtype`` is the cache's element type: ``"fp32"``, ``"bf16"``, ``"fp16"`` or ``"fp8"``.

    Raises:
        ValueError: any other ``dtype``.

    >>> kv_bytes_per_token(KVShape("gqa", 32, 8, 128, 2), dtype="bf16")
    131072
    """
    raise NotImplementedError("kv_bytes_per_token is not written yet")


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
    raise NotImplementedError("max_concurrency is not written yet")
