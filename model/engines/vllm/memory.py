"""The memory plan: will the checkpoint, its KV cache and CUDA graphs fit, before vLLM starts?

vLLM finds out by itself, minutes into start-up, and then fails with a message about "available
KV cache memory" that does not say which Folio setting to change. The plan is computed from the
checkpoint's files alone (``config.json`` and the safetensors headers), so the preflight and the
worker can refuse a configuration that cannot work, naming the numbers:

    weights       the bytes of every tensor in the checkpoint's ``*.safetensors`` shards
                  (the draft head included: vLLM loads it beside the model)
    KV per token  per attention layer, keys and values: 2 × kv_heads × head_dim × dtype bytes
                  (or kv_lora_rank + qk_rope_head_dim for multi-head latent attention)
    KV per page   KV per token × ``max_model_len`` (a page at its token cap)
    graphs        an allowance for CUDA graph capture and activations (``FOLIO_VLLM_OVERHEAD_GIB``)

A plan fails when the budget (the GPU's memory × ``gpu_memory_utilization``, or on vLLM's CPU
build ``VLLM_CPU_KVCACHE_SPACE`` for the KV cache alone) cannot hold the weights, the
allowance and one page at full length. When it holds one but not ``max_num_seqs`` pages at full
length, vLLM still runs (it schedules as many as fit and preempts the rest), and the plan says
how many fit.
"""

from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model.fastmtp.layout import text_section
from model.safetensors_index import read_header

GIB = 1024**3
_DTYPE_BYTES = {
    "bfloat16": 2,
    "float16": 2,
    "half": 2,
    "float32": 4,
    "float": 4,
    "fp8": 1,
    "fp8_e4m3": 1,
    "fp8_e5m2": 1,
}
_SAFETENSORS_BYTES = {"BF16": 2, "F16": 2, "F32": 4, "F64": 8, "I64": 8, "I32": 4, "U8": 1, "I8": 1}
_SAFETENSORS_BYTES.update({"F8_E4M3": 1, "F8_E5M2": 1, "BOOL": 1, "I16": 2, "U16": 2})
# vLLM 0.32's default ``gpu_memory_utilization`` (``CacheConfig`` in vllm/config/cache.py).
DEFAULT_UTILIZATION = 0.92
# Graph capture and activation peak: vLLM measures them at start-up; the plan keeps room for them.
DEFAULT_OVERHEAD_GIB = 2.0


class MemoryPlanError(RuntimeError):
    """The configuration cannot fit; the message carries the numbers."""


@dataclass(frozen=True)
class Device:
    kind: str  # "cuda" | "cpu" | "unknown"
    name: str
    total_bytes: int | None  # for "cpu": the KV cache space vLLM's CPU build reserves


@dataclass(frozen=True)
class MemoryPlan:
    device: Device
    budget_bytes: int | None
    weights_bytes: int
    kv_bytes_per_token: int
    max_model_len: int
    max_num_seqs: int
    overhead_bytes: int
    attention_layers: int

    @property
    def kv_bytes_per_page(self) -> int:
        return self.kv_bytes_per_token * self.max_model_len

    @property
    def kv_budget_bytes(self) -> int | None:
        if self.budget_bytes is None:
            return None
        if self.device.kind == "cpu":
            return self.budget_bytes  # the KV cache space is its own budget on the CPU build
        return self.budget_bytes - self.weights_bytes - self.overhead_bytes

    @property
    def pages_that_fit(self) -> int | None:
        budget = self.kv_budget_bytes
        if budget is None:
            return None
        return max(0, budget // self.kv_bytes_per_page) if self.kv_bytes_per_page else None

    @property
    def fits(self) -> bool:
        fit = self.pages_that_fit
        return fit is None or fit >= 1

    def lines(self) -> list[str]:
        budget = self.kv_budget_bytes
        fit = self.pages_that_fit
        lines = [
            f"device: {self.device.name}"
            + (f" ({_gib(self.device.total_bytes)})" if self.device.total_bytes else ""),
            f"weights: {_gib(self.weights_bytes)}",
            f"KV cache: {self.kv_bytes_per_token / 1024:.1f} KiB per token"
            f" ({self.attention_layers} attention layers)"
            f", {_gib(self.kv_bytes_per_page)} per page at max_model_len {self.max_model_len}",
            f"graphs and activations allowance: {_gib(self.overhead_bytes)}",
        ]
        if budget is None:
            lines.append("budget: unknown (no GPU seen); the plan is not checked")
        else:
            lines.append(
                f"KV budget: {_gib(budget)}: {fit} of {self.max_num_seqs} pages fit at full length"
            )
        return lines

    def check(self) -> None:
        if self.fits:
            return
        raise MemoryPlanError(
            "the memory plan does not fit: "
            + "; ".join(self.lines())
            + ". Lower FOLIO_VLLM_MAX_TOKENS (max_model_len), use a larger GPU, or raise "
            "gpu_memory_utilization in FOLIO_VLLM_ENGINE_ARGS"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "device": self.device.name,
            "device_bytes": self.device.total_bytes,
            "budget_bytes": self.budget_bytes,
            "weights_bytes": self.weights_bytes,
            "kv_bytes_per_token": self.kv_bytes_per_token,
            "kv_bytes_per_page": self.kv_bytes_per_page,
            "max_model_len": self.max_model_len,
            "max_num_seqs": self.max_num_seqs,
            "overhead_bytes": self.overhead_bytes,
            "pages_that_fit": self.pages_that_fit,
            "fits": self.fits,
        }


def _gib(n: int | None) -> str:
    return "?" if n is None else f"{n / GIB:.2f} GiB"


# --- the checkpoint ---------------------------------------------------------------------------


def text_config(config: dict[str, Any]) -> dict[str, Any]:
    """The language model's section of a DeepSeek-OCR-style config (or the config itself)."""
    return dict(text_section(config))


def safetensors_bytes(model: Path) -> int:
    """Bytes of every tensor in the folder's shards, read from their headers only."""
    total = 0
    for shard in sorted(model.glob("*.safetensors")):
        total += sum(_tensor_bytes(info) for info in read_header(shard).values())
    return total


def _tensor_bytes(info: dict[str, Any]) -> int:
    start, end = (int(x) for x in info.get("data_offsets", (0, 0)))
    if end > start:
        return end - start
    count = 1
    for dim in info.get("shape", []):
        count *= dim
    return count * _SAFETENSORS_BYTES.get(info.get("dtype", ""), 2)


def kv_bytes_per_token(text: dict[str, Any], dtype_bytes: int, *, draft_layers: int) -> int:
    """KV cache bytes one token costs across the decoder's layers and the draft's."""
    layers = int(text["num_hidden_layers"]) + draft_layers
    # vLLM's DeepseekV2DecoderLayer takes plain multi-head attention when qk_nope_head_dim and
    # qk_rope_head_dim are both 0 (DeepSeek-OCR's decoder), latent attention otherwise.
    kv_lora = text.get("kv_lora_rank")
    mha = not (text.get("qk_nope_head_dim") or text.get("qk_rope_head_dim"))
    if not mha and kv_lora:
        per_layer = int(kv_lora) + int(text.get("qk_rope_head_dim") or 0)
    else:
        heads = int(text["num_attention_heads"])
        kv_heads = int(text.get("num_key_value_heads") or heads)
        # vLLM's DeepseekAttention (the MHA path DeepSeek-OCR takes) uses hidden / heads.
        head_dim = int(text["hidden_size"]) // heads
        per_layer = 2 * kv_heads * head_dim
    return layers * per_layer * dtype_bytes


# --- the device -------------------------------------------------------------------------------


def visible_device(environ: dict[str, str] | None = None) -> Device:
    """The GPU this process would use, read through NVML or ``nvidia-smi`` (neither opens a CUDA
    context, which would hold GPU memory in the worker process for nothing), or vLLM's CPU KV
    cache space where vLLM runs on the CPU. ``FOLIO_VLLM_DEVICE_MEMORY_GIB`` overrides both."""
    env = os.environ if environ is None else environ
    forced = env.get("FOLIO_VLLM_DEVICE_MEMORY_GIB", "").strip()
    if forced:
        return Device("cuda", f"FOLIO_VLLM_DEVICE_MEMORY_GIB={forced}", int(float(forced) * GIB))
    found = _nvml() or _nvidia_smi()
    if found is not None:
        return found
    space = env.get("VLLM_CPU_KVCACHE_SPACE", "").strip()
    if _vllm_is_cpu_build() and space:
        # vLLM 0.32's CPU platform turns this (whole GiB) into the KV cache's size
        # (vllm/platforms/cpu.py); unset, vLLM sizes the cache itself and the plan is unchecked.
        return Device("cpu", f"CPU (VLLM_CPU_KVCACHE_SPACE={space} GiB)", int(space) * GIB)
    return Device("unknown", "no GPU seen", None)


def _nvml() -> Device | None:
    try:
        import pynvml
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        handle = pynvml.nvmlDeviceGetHandleByIndex(_first_visible_index())
        name = pynvml.nvmlDeviceGetName(handle)
        total = pynvml.nvmlDeviceGetMemoryInfo(handle).total
        return Device("cuda", name if isinstance(name, str) else name.decode(), int(total))
    except Exception:  # no driver, no device: the next probe decides
        return None


def _nvidia_smi() -> Device | None:
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total", "--format=csv,noheader,nounits"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        ).stdout.splitlines()
    except (OSError, subprocess.SubprocessError):
        return None
    rows = [line.rsplit(",", 1) for line in out if "," in line]
    index = _first_visible_index()
    if index >= len(rows):
        return None
    name, mib = rows[index]
    return Device("cuda", name.strip(), int(float(mib)) * 1024 * 1024)


def _first_visible_index() -> int:
    visible = os.environ.get("CUDA_VISIBLE_DEVICES", "").split(",")[0].strip()
    return int(visible) if visible.isdigit() else 0


def _vllm_is_cpu_build() -> bool:
    from importlib import metadata

    try:
        metadata.version("vllm-cpu")
    except metadata.PackageNotFoundError:
        return False
    return True


def plan(
    *,
    model: Path,
    max_model_len: int,
    max_num_seqs: int,
    dtype: str,
    gpu_memory_utilization: float,
    draft_layers: int,
    device: Device,
    overhead_bytes: int,
) -> MemoryPlan:
    config = json.loads((model / "config.json").read_text())
    text = text_config(config)
    dtype_bytes = _DTYPE_BYTES.get(str(dtype).replace("torch.", ""), 2)
    per_token = kv_bytes_per_token(text, dtype_bytes, draft_layers=draft_layers)
    if device.total_bytes is None:
        budget = None
    elif device.kind == "cpu":
        budget = device.total_bytes
    else:
        budget = int(device.total_bytes * gpu_memory_utilization)
    return MemoryPlan(
        device=device,
        budget_bytes=budget,
        weights_bytes=safetensors_bytes(model),
        kv_bytes_per_token=per_token,
        max_model_len=max_model_len,
        max_num_seqs=max_num_seqs,
        overhead_bytes=0 if device.kind == "cpu" else overhead_bytes,
        attention_layers=int(text["num_hidden_layers"]) + draft_layers,
    )
