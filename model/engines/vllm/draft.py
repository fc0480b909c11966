"""Does a checkpoint carry a FastMTP draft head, and which glue would serve it in vLLM?

Read from the checkpoint's files only (``config.json`` and the safetensors headers), without
vLLM or torch, so the worker and the preflight decide before anything heavy is imported.

Draft tensors are recognised in the two layouts Folio's loader reads (``model.fastmtp.loader``):
jina-ocr-v1's ``mtp_module.*`` / ``mtp_embed_tokens.*``, and DeepSeek-V3's
``model.layers.<num_hidden_layers>.*`` (the layer after the decoder's last).

The routes that can serve them, in order:

- ``FOLIO_VLLM_PLUGIN=module:function``: glue named by the operator (for instance the
  checkpoint's own ``register()``), which then replaces Folio's;
- ``folio``: Folio's own registration (``model.engines.vllm.fastmtp_vllm``), for a
  ``DeepseekOCRForCausalLM`` checkpoint: vLLM 0.32 maps ``method: "mtp"`` only for
  ``deepseek_v3``/``deepseek_v32``/``glm_moe_dsa`` configs (``SpeculativeConfig.
  hf_config_override`` in vllm/config/speculative.py), not for ``deepseek_ocr``.

A checkpoint with draft tensors and no route is an error, never a silent "off".
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from model.engines.vllm.memory import read_header, text_config

JINA_PREFIXES = ("mtp_module.", "mtp_embed_tokens.")
PLUGIN_VARIABLE = "FOLIO_VLLM_PLUGIN"
# The architectures Folio's own FastMTP registration knows how to serve.
FOLIO_ROUTE_ARCHITECTURES = ("DeepseekOCRForCausalLM",)


class DraftRouteError(RuntimeError):
    """Draft tensors that no glue serves, or glue named that cannot be used."""


@dataclass(frozen=True)
class DraftHead:
    layout: str  # "mtp_module" | "deepseek-v3" | "" (none)
    tensors: int
    own_embedding: bool
    own_head: bool

    @property
    def present(self) -> bool:
        return self.tensors > 0


@dataclass(frozen=True)
class Checkpoint:
    folder: Path
    architecture: str
    model_type: str
    draft: DraftHead
    config: dict[str, Any]

    @property
    def text(self) -> dict[str, Any]:
        return text_config(self.config)


def read_checkpoint(folder: str | Path) -> Checkpoint:
    folder = Path(folder)
    config_file = folder / "config.json"
    try:
        config = json.loads(config_file.read_text())
    except OSError:
        raise DraftRouteError(f"{folder} has no readable config.json: not a checkpoint") from None
    except ValueError as exc:
        raise DraftRouteError(f"{config_file} is not valid JSON: {exc}") from None
    architectures = config.get("architectures") or [""]
    return Checkpoint(
        folder=folder,
        architecture=str(architectures[0]),
        model_type=str(config.get("model_type", "")),
        draft=draft_head(folder, config),
        config=config,
    )


def tensor_names(folder: Path) -> list[str]:
    names: list[str] = []
    for shard in sorted(folder.glob("*.safetensors")):
        names.extend(read_header(shard))
    return names


def draft_head(folder: Path, config: dict[str, Any]) -> DraftHead:
    names = tensor_names(folder)
    jina = [n for n in names if n.startswith(JINA_PREFIXES)]
    if jina:
        return DraftHead(
            layout="mtp_module",
            tensors=len(jina),
            own_embedding=any(
                n.startswith("mtp_embed_tokens.") or n.endswith("mtp_module.embed_tokens.weight")
                for n in jina
            ),
            own_head=any(".shared_head.head." in n for n in jina),
        )
    layers = text_config(config).get("num_hidden_layers")
    if layers is not None:
        prefix = f"model.layers.{int(layers)}."
        v3 = [n for n in names if n.startswith(prefix)]
        if v3:
            return DraftHead(
                layout="deepseek-v3",
                tensors=len(v3),
                own_embedding=any(n.startswith(prefix + "embed_tokens.") for n in v3),
                own_head=any(n.startswith(prefix + "shared_head.head.") for n in v3),
            )
    return DraftHead(layout="", tensors=0, own_embedding=False, own_head=False)


def named_plugin(environ: Any = None) -> str:
    env = os.environ if environ is None else environ
    named = env.get(PLUGIN_VARIABLE, "").strip()
    if named and (":" not in named or not all(named.partition(":")[::2])):
        raise DraftRouteError(f"{PLUGIN_VARIABLE}={named!r} is not module:function")
    return named


def route(checkpoint: Checkpoint, named: str = "") -> str:
    """Which glue serves the draft head in vLLM: ``plugin:<module:function>`` (``named``),
    ``folio``, or ``""`` when the checkpoint has no draft head. Raises when it has one that
    nothing serves."""
    if not checkpoint.draft.present:
        return ""
    if named:
        return f"plugin:{named}"
    if checkpoint.architecture in FOLIO_ROUTE_ARCHITECTURES:
        return "folio"
    raise DraftRouteError(
        f"{checkpoint.folder} has {checkpoint.draft.tensors} FastMTP draft tensors"
        f" ({checkpoint.draft.layout} layout) but architecture {checkpoint.architecture!r}"
        f" has no route that serves them in vLLM: name its glue with"
        f" {PLUGIN_VARIABLE}=module:function, or choose FOLIO_VLLM_SPECULATION=off"
    )
