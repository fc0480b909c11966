"""KV-cache surgery that works on every cache layout the adapter meets.

The speculative loop keeps one rectangular cache for the whole batch, slots in time order, each
row's real tokens right-aligned after its left padding. After a verifier pass each row keeps a
different number of slots; rolling back means dropping the rejected ones and re-aligning.
Keys are cached after rotary encoding, so a slot may move to another index without changing
its meaning: the position travels with the key, not with the slot.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch
from torch import Tensor

TensorFn = Callable[[Tensor], Tensor]


def map_kv(cache: Any, fn: TensorFn) -> Any:
    """Apply ``fn`` to every key and value tensor (B, heads, S, head_dim) of ``cache``.

    Handles ``transformers`` ``DynamicCache`` (5.x ``layers``, 4.x ``key_cache``), modified in
    place and returned, and the legacy tuple-of-(key, value) layout, rebuilt.
    """
    if cache is None:
        return None
    layers = getattr(cache, "layers", None)
    if layers is not None:
        for layer in layers:
            layer.keys = fn(layer.keys)
            layer.values = fn(layer.values)
        return cache
    if hasattr(cache, "key_cache") and hasattr(cache, "value_cache"):
        cache.key_cache = [fn(t) for t in cache.key_cache]
        cache.value_cache = [fn(t) for t in cache.value_cache]
        return cache
    return tuple((fn(k), fn(v)) for k, v in cache)


def select_rows(cache: Any, rows: Tensor) -> Any:
    return map_kv(cache, lambda t: t.index_select(0, rows))


def realign(valid: Tensor) -> tuple[slice | Tensor, Tensor]:
    """How to drop every invalid slot that is not left padding, and the mask afterwards.

    Returns either a slice (when every row lost the same slots: batch size one, or uniform
    acceptance, which costs no copy) or a (B, S') gather index, plus the new (B, S') mask.
    """
    b, s = valid.shape
    counts = valid.sum(dim=1)
    width = int(counts.max()) if b else 0
    aligned = torch.arange(width, device=valid.device)[None, :] >= (width - counts)[:, None]
    trailing = s - _last_valid_slot(valid) - 1
    end = s - trailing
    window = valid[:, end - width : end]
    if width <= end and torch.equal(window, aligned) and not valid[:, : end - width].any():
        return slice(end - width, end), aligned
    # A stable sort puts each row's invalid slots first and keeps the valid ones in time order.
    order = torch.sort(valid.to(torch.int8), dim=1, stable=True).indices
    return order[:, s - width :], aligned


def _last_valid_slot(valid: Tensor) -> int:
    cols = valid.any(dim=0).nonzero()
    return int(cols[-1]) if len(cols) else -1


def crop(cache: Any, end: int) -> Any:
    """Keep the first ``end`` slots: the rollback when every row rejected the same trailing
    slots. A view, not a copy; the next pass's concatenation copies once, as it must anyway."""
    if _cache_len(cache) == end:
        return cache
    return map_kv(cache, lambda t: t[:, :, :end])


def apply_realign(cache: Any, how: slice | Tensor) -> Any:
    if isinstance(how, slice):
        if how.start == 0 and how.stop == _cache_len(cache):
            return cache
        return map_kv(cache, lambda t: t[:, :, how])

    def gather(t: Tensor) -> Tensor:
        idx = how[:, None, :, None].expand(-1, t.shape[1], -1, t.shape[3])
        return t.gather(2, idx)

    return map_kv(cache, gather)


def _cache_len(cache: Any) -> int:
    """Slots in the cache, read off its first key tensor (every layer has the same count)."""
    layers = getattr(cache, "layers", None)
    if layers is not None:
        return layers[0].keys.shape[2] if layers else 0
    if hasattr(cache, "key_cache"):
        return cache.key_cache[0].shape[2] if cache.key_cache else 0
    return cache[0][0].shape[2] if len(cache) else 0


def gather_slots(t: Tensor, how: slice | Tensor) -> Tensor:
    """The same realignment for a (B, S, ...) tensor that lives beside a cache."""
    if isinstance(how, slice):
        return t[:, how]
    idx = how.reshape(*how.shape, *([1] * (t.dim() - 2))).expand(-1, -1, *t.shape[2:])
    return t.gather(1, idx)
