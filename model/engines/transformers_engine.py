"""The `transformers` engine: a Hugging Face vision-language OCR checkpoint in this process.

An alternative to vLLM for a GPU host without it (or a CPU, slowly): the checkpoint is read
from a local directory (``FOLIO_TRANSFORMERS_MODEL_DIR``, never downloaded at run time) and
decoded greedily. When the checkpoint carries a FastMTP head (jina-ocr-v1's
``mtp_module.heads.0.*``, which the published Transformers path ignores; the layouts and the
``mtp_*`` keys are ``model.fastmtp.layout``'s) the engine decodes with
``model.fastmtp.speculative_decode``, whose tokens equal plain greedy decoding's; without one it
decodes plainly. ``PageResult.extra`` says which, with the FastMTP counters.

Two conventions for the page image, chosen by the checkpoint:

- ``processor`` (Transformers' own classes: DeepSeek-OCR-2, LLaVA and their kin): the processor
  expands the image placeholder in the prompt and prepares pixel values;
  ``model.get_image_features`` turns them into embedding vectors, which replace the
  placeholders' token embeddings (``config.image_token_id``). The prefill runs on those
  ``inputs_embeds``; decoding continues from token ids.
- ``deepseek-ocr`` (a checkpoint whose ``config.json`` names remote code in ``auto_map``, as
  DeepSeek-OCR's and jina-ocr-v1's do): loaded with ``AutoTokenizer`` and
  ``AutoModelForCausalLM`` with ``trust_remote_code=True``, only when
  ``FOLIO_TRANSFORMERS_TRUST_REMOTE_CODE`` allows it (the folder's Python runs in the worker);
  the inputs are DeepSeek-OCR's public ones, built by ``model.engines.deepseek_ocr_hf``, and the
  model merges the page itself on the prefill.

Configuration (environment): ``FOLIO_TRANSFORMERS_MODEL_DIR`` (required),
``FOLIO_TRANSFORMERS_DEVICE`` (default ``cuda`` when available, else ``cpu``),
``FOLIO_TRANSFORMERS_DTYPE`` (default bfloat16 on a GPU, float32 on a CPU),
``FOLIO_TRANSFORMERS_FASTMTP_K`` (drafts per verifier pass; unset, the checkpoint's
``mtp_num_speculative_steps``, else 3; 0 turns FastMTP off),
``FOLIO_TRANSFORMERS_MAX_NEW_TOKENS`` (default 4096), ``FOLIO_TRANSFORMERS_TRUST_REMOTE_CODE``
(default off).
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any, ClassVar

import torch
from PIL import Image
from torch import Tensor

from model.documents import DocumentError
from model.engines.base import EngineError, EngineOptions, PageInput, PageResult
from model.engines.deepseek_ocr_hf import (
    ImageVerifier,
    PromptError,
    page_inputs,
    remote_code_class,
)
from model.engines.transformers_config import DEFAULT_K, TransformersConfig
from model.fastmtp import (
    CausalLMAdapter,
    MTPDraftBlock,
    SpecCounters,
    greedy_decode,
    speculative_decode,
)
from model.fastmtp.layout import DraftLoadError, DraftPlan
from model.fastmtp.loader import load_draft
from model.pages import PageSelectionError
from model.postprocess import figure_reports, vlm_markdown
from model.rendering import open_page_image

logger = logging.getLogger(__name__)

# jina-ocr-v1's prompt, after the image (DESIGN.md).
PROMPT = (
    "Transcribe the provided document image into a clean Markdown format, "
    "preserving the natural reading order."
)
_DTYPES = {"float32": torch.float32, "float16": torch.float16, "bfloat16": torch.bfloat16}
# Processor outputs that belong to the text side; everything else goes to the vision side.
_TEXT_INPUTS = {"input_ids", "attention_mask", "token_type_ids", "position_ids"}


@dataclass
class Checkpoint:
    """What the engine needs from a checkpoint directory.

    ``model``: a Hugging Face model with the causal-LM calling convention (``input_ids`` or
    ``inputs_embeds``, ``attention_mask``, ``position_ids``, a cache, hidden states out),
    ``get_input_embeddings``/``get_output_embeddings``, ``get_image_features`` and
    ``config.image_token_id``. ``processor``: called as ``processor(images=[image],
    text=prompt, return_tensors="pt")``, with ``decode`` and a ``tokenizer`` (``eos_token_id``).

    ``convention`` ``"deepseek-ocr"``: ``model`` is DeepSeek-OCR's remote-code model and
    ``processor`` its tokenizer (``model.engines.deepseek_ocr_hf``).
    """

    model: Any
    processor: Any
    convention: str = "processor"


Loader = Callable[[Path, torch.device, torch.dtype], Checkpoint]


def load_pretrained(
    path: Path, device: torch.device, dtype: torch.dtype, *, trust_remote_code: bool = False
) -> Checkpoint:
    """The Auto classes, from local files only: a worker never downloads a model. A checkpoint
    that names remote code is loaded through it when that is allowed, the way DeepSeek-OCR's
    public code loads it; otherwise through Transformers' own classes."""
    from transformers import (
        AutoModelForCausalLM,
        AutoModelForImageTextToText,
        AutoProcessor,
        AutoTokenizer,
    )

    remote = remote_code_class(path)
    if remote and trust_remote_code:
        tokenizer = AutoTokenizer.from_pretrained(
            path, local_files_only=True, trust_remote_code=True
        )
        model = AutoModelForCausalLM.from_pretrained(
            path, local_files_only=True, trust_remote_code=True, dtype=dtype
        )
        return Checkpoint(model.to(device).eval(), tokenizer, convention="deepseek-ocr")
    try:
        processor = AutoProcessor.from_pretrained(path, local_files_only=True)
        # The draft tensors are not the model's; Transformers reports them unused and skips them.
        model = AutoModelForImageTextToText.from_pretrained(
            path, local_files_only=True, dtype=dtype
        )
    except ValueError as exc:
        if not remote:
            raise
        raise EngineError(
            f"{path.name} is served by its own remote code ({remote}), which Transformers runs"
            " only with FOLIO_TRANSFORMERS_TRUST_REMOTE_CODE=1: read the folder's .py files,"
            f" then allow it ({exc})"
        ) from exc
    return Checkpoint(model=model.to(device).eval(), processor=processor)


class TransformersEngine:
    name: ClassVar[str] = "transformers"
    # Bump when the same page would come out differently (it is part of the cache key).
    version: ClassVar[str] = "transformers-2"
    # One page at a time: the decoding loop holds a lock around the model, and at batch one
    # every verifier pass rolls the KV cache back by a crop, never a gather.
    max_pages_in_flight: ClassVar[int] = 1

    def __init__(
        self,
        model_dir: Path | str | None = None,
        *,
        loader: Loader = load_pretrained,
        k: int | None = None,
        max_new_tokens: int | None = None,
        device: str | None = None,
        dtype: torch.dtype | None = None,
    ) -> None:
        self._model_dir = Path(model_dir) if model_dir is not None else None
        self._loader = loader
        self._k = k
        self._max_new_tokens = max_new_tokens
        self._device_name = device
        self._dtype = dtype
        self._checkpoint: Checkpoint | None = None
        self._adapter: CausalLMAdapter | None = None
        self._draft: MTPDraftBlock | None = None
        self._lock = threading.Lock()

    # -- loading -------------------------------------------------------------------------

    def load(self) -> None:
        with self._lock:
            if self._checkpoint is None:
                self._load()

    def _load(self) -> None:
        # The environment's settings (TransformersConfig), under what the constructor was given.
        given = {"FOLIO_TRANSFORMERS_MODEL_DIR": str(self._model_dir)} if self._model_dir else {}
        config = TransformersConfig.from_env({**os.environ, **given})
        model_dir = config.model_dir
        if not model_dir.is_dir():
            raise EngineError(f"FOLIO_TRANSFORMERS_MODEL_DIR is not a directory: {model_dir}")
        name = self._device_name or config.device
        device = torch.device(name or ("cuda" if torch.cuda.is_available() else "cpu"))
        dtype = self._dtype or _dtype_for(config.dtype, device)
        if self._max_new_tokens is None:
            self._max_new_tokens = config.max_new_tokens
        started = time.perf_counter()
        loader = self._loader
        if loader is load_pretrained:
            loader = partial(load_pretrained, trust_remote_code=config.trust_remote_code)
        checkpoint = loader(model_dir, device, dtype)
        verifier = checkpoint.model
        if checkpoint.convention == "deepseek-ocr":
            verifier = ImageVerifier(checkpoint.model)
        adapter = CausalLMAdapter(verifier)
        k = self._k if self._k is not None else config.fastmtp_k
        draft = None
        if k is None or k > 0:
            loaded = _load_draft(model_dir, checkpoint.model, adapter, device, dtype)
            if loaded is not None:
                draft, plan = loaded
                if k is None:  # the checkpoint's own K (mtp_num_speculative_steps)
                    k = plan.head.speculative_steps or DEFAULT_K
        self._k = k if k is not None else DEFAULT_K
        self._model_dir = model_dir
        self._checkpoint, self._adapter, self._draft = checkpoint, adapter, draft
        logger.info(
            "transformers engine: %s on %s (%s), %s, loaded in %.1fs",
            model_dir.name,
            device,
            dtype,
            f"FastMTP K={self._k}" if draft is not None else "plain greedy decoding",
            time.perf_counter() - started,
        )

    @property
    def speculative(self) -> bool:
        return self._draft is not None

    # -- one page ------------------------------------------------------------------------

    def transcribe(self, page: PageInput, options: EngineOptions) -> PageResult:
        self.load()
        started = time.perf_counter()
        try:
            image = open_page_image(page.data, page.mime_type, page.page_number)
        except (DocumentError, PageSelectionError) as exc:
            raise EngineError(str(exc)) from exc
        rendered = time.perf_counter()
        with self._lock:  # one model, one decoding loop at a time
            ids, tokens, extra = self._decode(image)
        assert self._checkpoint is not None  # load() above
        eos = _eos_token_id(self._checkpoint.model, self._checkpoint.processor)
        body = tokens[:-1] if tokens and tokens[-1] == eos else tokens
        # Special tokens kept, as DeepSeek-OCR's own inference decodes: <td> and the grounding
        # tags are special tokens, and the post-processing reads the tags.
        text = self._checkpoint.processor.decode(body, skip_special_tokens=False)
        markdown, figures = vlm_markdown(
            text, page_size=image.size, page_number=page.page_number, figures=bool(options.figures)
        )
        if figures:
            extra["figures"] = figure_reports(image, figures)
        return PageResult(
            markdown=markdown,
            input_tokens=len(ids),
            output_tokens=len(tokens),
            render_seconds=rendered - started,
            engine_seconds=time.perf_counter() - rendered,
            method="vlm",
            extra=extra,
        )

    def _decode(self, image: Image.Image) -> tuple[list[int], list[int], dict[str, Any]]:
        assert self._checkpoint is not None and self._adapter is not None
        model, processor = self._checkpoint.model, self._checkpoint.processor
        embeds: list[Tensor] | None
        page: AbstractContextManager[None]
        if self._checkpoint.convention == "deepseek-ocr":
            # The model merges the page itself on the prefill (ImageVerifier passes the images).
            try:
                inputs = page_inputs(processor, image, PROMPT)
            except PromptError as exc:
                raise EngineError(str(exc)) from exc
            verifier = self._adapter.model
            assert isinstance(verifier, ImageVerifier)
            ids, embeds, page = inputs.input_ids, None, verifier.page(inputs)
        else:
            ids, prompt_embeds = multimodal_prefill(model, processor, image, PROMPT)
            embeds, page = [prompt_embeds], nullcontext()
        eos = _eos_token_id(model, processor)
        common = {"max_new_tokens": self._max_new_tokens, "eos_token_id": eos}
        extra: dict[str, Any] = {"model": self._model_dir.name if self._model_dir else ""}
        if self._draft is None:
            with page:
                tokens = greedy_decode(self._adapter, [ids], prompt_embeds=embeds, **common)[0]
            extra["decoding"] = "greedy"
        else:
            assert self._k is not None  # load() takes it from the config when not given
            counters = SpecCounters(self._k)
            with page:
                tokens = speculative_decode(
                    self._adapter,
                    self._draft,
                    [ids],
                    k=self._k,
                    counters=counters,
                    prompt_embeds=embeds,
                    **common,
                )[0]
            extra.update(
                decoding="fastmtp",
                fastmtp_k=self._k,
                verifier_passes=counters.verifier_passes,
                tokens_per_step=round(counters.tokens_per_step, 3),
                acceptance_rates=[round(a, 3) for a in counters.acceptance_rates],
                # One page per decode: each verifier pass's accepted drafts, in order (vLLM's
                # detailed per-request ``per_step_accepted``).
                per_step_accepted=[n for row in counters.per_step for n in row],
                **counters.as_metrics(),
            )
        extra["finished"] = "stop" if tokens and tokens[-1] == eos else "length"
        return ids, tokens, extra


def multimodal_prefill(
    model: Any, processor: Any, image: Image.Image, prompt: str
) -> tuple[list[int], Tensor]:
    """The prompt's token ids and its (S, H) input embeddings with the image spliced in."""
    token = getattr(processor, "image_token", "<image>")
    inputs: Mapping[str, Any] = processor(
        images=[image], text=f"{token}\n{prompt}", return_tensors="pt"
    )
    embedding = model.get_input_embeddings()
    device, dtype = embedding.weight.device, embedding.weight.dtype
    ids = inputs["input_ids"].to(device)
    with torch.inference_mode():
        embeds = embedding(ids)
        # Pixel values in the model's dtype; counts such as DeepSeek-OCR-2's
        # num_local_patches (a tensor or a list) pass through as they are.
        vision = {
            key: _to_model(value, device, dtype)
            for key, value in inputs.items()
            if key not in _TEXT_INPUTS
        }
        features = _feature_rows(model.get_image_features(**vision), embeds.shape[-1])
        placeholders = ids == model.config.image_token_id
        if int(placeholders.sum()) != features.shape[0]:
            raise EngineError(
                f"the processor made {int(placeholders.sum())} image placeholders"
                f" but the vision side returned {features.shape[0]} embeddings"
            )
        embeds = embeds.masked_scatter(placeholders[..., None], features.to(dtype))
    return ids[0].tolist(), embeds[0]


def _to_model(value: Any, device: torch.device, dtype: torch.dtype) -> Any:
    if not isinstance(value, Tensor):
        return value
    return value.to(device, dtype) if torch.is_floating_point(value) else value.to(device)


def _feature_rows(features: Any, hidden: int) -> Tensor:
    """(N, H) rows from what ``get_image_features`` returns across Transformers models: a
    tensor, a list of per-image tensors, or an output object with ``pooler_output``."""
    if not isinstance(features, Tensor | list | tuple):
        pooled = getattr(features, "pooler_output", None)
        features = pooled if pooled is not None else features.last_hidden_state
    if isinstance(features, list | tuple):
        features = torch.cat([f.reshape(-1, hidden) for f in features])
    return features.reshape(-1, hidden)


def _load_draft(
    model_dir: Path,
    model: Any,
    adapter: CausalLMAdapter,
    device: torch.device,
    dtype: torch.dtype,
) -> tuple[MTPDraftBlock, DraftPlan] | None:
    """The checkpoint's FastMTP head through Folio's one mapping (``model.fastmtp.layout``: the
    published ``mtp_module.heads.0.*``, ``mtp_module.*`` or DeepSeek-V3's layer), or None."""
    try:
        loaded = load_draft(model_dir, checkpoint_config(model_dir, model))
    except (DraftLoadError, KeyError) as exc:
        raise EngineError(f"the checkpoint's FastMTP head does not load: {exc}") from exc
    if loaded is None:
        return None
    block, plan = loaded
    return block.to(device, dtype).eval().share(adapter.embedding, adapter.head), plan


def checkpoint_config(model_dir: Path, model: Any) -> dict[str, Any]:
    """The folder's ``config.json`` (where jina-ocr-v1 keeps its ``mtp_*`` keys, at the top
    level), with the decoder's section as the loaded model reads it."""
    try:
        config: dict[str, Any] = json.loads((model_dir / "config.json").read_text())
    except (OSError, ValueError):
        config = {}
    text = _text_config(model)
    loaded = text.to_dict() if hasattr(text, "to_dict") else dict(vars(text))
    section = "language_config" if "language_config" in config else "text_config"
    config[section] = {**(config.get(section) or {}), **loaded}
    return config


def _text_config(model: Any) -> Any:
    config = model.config
    text = config.get_text_config() if hasattr(config, "get_text_config") else None
    return text or config


def _eos_token_id(model: Any, processor: Any) -> int | None:
    tokenizer = getattr(processor, "tokenizer", processor)
    eos = getattr(tokenizer, "eos_token_id", None)
    if eos is None:
        eos = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    if isinstance(eos, list):  # several stop ids: the loop takes one, the first is the EOS
        eos = eos[0] if eos else None
    return eos


def _dtype_for(name: str, device: torch.device) -> torch.dtype:
    if not name:
        return torch.bfloat16 if device.type == "cuda" else torch.float32
    return _DTYPES[name]
