"""A folder of safetensors shards, read from the shards' headers alone (no torch, no data).

The preflight, the memory plan and the draft-head mapping all need a checkpoint's tensor names,
shapes and sizes before anything heavy is imported; a shard's header is a little-endian u64
length followed by that many bytes of JSON (the safetensors format).
"""

from __future__ import annotations

import json
import struct
from pathlib import Path
from typing import Any


def shards(folder: Path) -> list[Path]:
    """The folder's ``*.safetensors`` shards in name order (or the one file given)."""
    return sorted(folder.glob("*.safetensors")) if folder.is_dir() else [folder]


def read_header(shard: Path) -> dict[str, dict[str, Any]]:
    """A safetensors file's tensor table (name → dtype, shape, offsets), without the data."""
    with shard.open("rb") as f:
        (length,) = struct.unpack("<Q", f.read(8))
        header: dict[str, dict[str, Any]] = json.loads(f.read(length))
    header.pop("__metadata__", None)
    return header


def tensor_shapes(folder: Path) -> dict[str, tuple[int, ...]]:
    """Every tensor's shape, by name, across the folder's shards."""
    found: dict[str, tuple[int, ...]] = {}
    for shard in shards(folder):
        for name, info in read_header(shard).items():
            found[name] = tuple(int(d) for d in info.get("shape", []))
    return found
