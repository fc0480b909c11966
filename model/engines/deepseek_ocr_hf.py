"""DeepSeek-OCR's public Hugging Face calling convention, for checkpoints that ship remote code.

DeepSeek-OCR (and checkpoints built on it, such as jina-ocr-v1) publish their Transformers model
as remote code that ``AutoModel``/``AutoModelForCausalLM.from_pretrained(folder,
trust_remote_code=True)`` loads (``DeepseekOCRForCausalLM`` in ``modeling_deepseekocr.py`` of
deepseek-ai/DeepSeek-OCR on the Hugging Face Hub). That model has no processor and no
``get_image_features``: its ``infer`` builds the inputs itself and calls
``generate(input_ids, images=[(crops, global_views)], images_seq_mask, images_spatial_crop)``.
This module builds the same inputs, in Folio's own code, and wraps the model so that Folio's
decoding loops (plain greedy and FastMTP) drive it through its own ``forward``:

- the prompt: the tokenizer's chat template over one user message of an image part and a text
  part when it has one, else DeepSeek-OCR's "plain" format (the content alone:
  ``<image>\\n`` then the prompt); then the BOS id, the text before the image, the image
  tokens, the text after it, encoded without special tokens as ``infer``'s ``text_encode`` does;
- the page: the global view padded (not stretched) to 1024 × 1024 with (127, 127, 127), the
  tiles 640 × 640 on the grid ``model.gundam`` picks (at most 9 tiles, ``dynamic_preprocess``'s
  default there), both scaled to [0, 1] then normalised with mean and std 0.5; a page with no
  tiles passes an all-zero crop tensor, which the model reads as "no tiles";
- the image tokens: ``(16 + 1)·16 + 1`` for the global view plus ``(10·w + 1)·(10·h)`` for a
  ``w × h`` grid (``gundam.placeholder_count``), all marked in ``images_seq_mask``;
- the model's ``forward`` merges the page's features only on a prefill (more than one new token)
  whose global view is not all zeros, so every later step passes zero images: a single token
  never reads them, and a FastMTP verifier pass (K + 1 tokens) must not merge them again.
  The public code reads ``input_ids`` before anything else, so the wrapper never passes
  ``inputs_embeds``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from PIL import Image
from torch import Tensor, nn

from model import gundam

IMAGE_TOKEN = "<image>"
MEAN = STD = 0.5
# The public infer's dynamic_preprocess cuts at most 9 tiles (vLLM's processor caps at 6).
MAX_TILES = gundam.MAX_TILES
_REMOTE_CLASSES = ("AutoModelForCausalLM", "AutoModel")


class PromptError(ValueError):
    """A tokenizer or chat template that cannot carry the page's image."""


def remote_code_class(folder: Path) -> str:
    """The remote-code class ``config.json`` names for the causal LM (``auto_map``), or ""."""
    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError):
        return ""
    auto_map = config.get("auto_map") or {}
    for name in _REMOTE_CLASSES:
        if isinstance(auto_map.get(name), str):
            return str(auto_map[name])
    return ""


@dataclass(frozen=True)
class PageInputs:
    input_ids: list[int]
    images_seq_mask: list[bool]
    crops: Tensor  # (tiles, 3, 640, 640), or (1, 3, 640, 640) of zeros without tiles
    global_view: Tensor  # (1, 3, 1024, 1024)
    grid: gundam.Grid


def prompt_text(tokenizer: Any, prompt: str) -> str:
    if getattr(tokenizer, "chat_template", None):
        messages = [
            {"role": "user", "content": [{"type": "image"}, {"type": "text", "text": prompt}]}
        ]
        return str(tokenizer.apply_chat_template(messages, tokenize=False))
    return f"{IMAGE_TOKEN}\n{prompt}"


def page_inputs(tokenizer: Any, image: Image.Image, prompt: str) -> PageInputs:
    text = prompt_text(tokenizer, prompt)
    before, found, after = text.partition(IMAGE_TOKEN)
    if not found:
        raise PromptError(f"the chat template left no {IMAGE_TOKEN} in the prompt: {text!r}")
    if IMAGE_TOKEN in after:
        raise PromptError(f"the prompt holds more than one {IMAGE_TOKEN}: {text!r}")
    image_id = tokenizer.convert_tokens_to_ids(IMAGE_TOKEN)
    bos = tokenizer.bos_token_id
    if image_id is None or image_id == getattr(tokenizer, "unk_token_id", None) or bos is None:
        raise PromptError(f"the tokenizer has no {IMAGE_TOKEN} token or no BOS token")
    head = tokenizer.encode(before, add_special_tokens=False)
    tail = tokenizer.encode(after, add_special_tokens=False)
    grid = gundam.choose_grid(*image.size, max_tiles=MAX_TILES)
    count = gundam.placeholder_count(grid)
    tiles = gundam.tiles(image, grid)
    crops = (
        torch.stack([_normalised(t) for t in tiles])
        if tiles
        else torch.zeros(1, 3, gundam.TILE_SIZE, gundam.TILE_SIZE)
    )
    return PageInputs(
        input_ids=[bos, *head, *[image_id] * count, *tail],
        images_seq_mask=[False] * (1 + len(head)) + [True] * count + [False] * len(tail),
        crops=crops,
        global_view=_normalised(gundam.global_view(image))[None],
        grid=grid,
    )


def _normalised(view: Image.Image) -> Tensor:
    pixels = np.asarray(view.convert("RGB"), dtype=np.float32) / 255.0
    return (torch.from_numpy(pixels).permute(2, 0, 1) - MEAN) / STD


class ImageVerifier(nn.Module):  # type: ignore[misc]  # torch is not analysed: Any
    """The remote model behind the Hugging Face causal-LM convention Folio's loops speak
    (``model.fastmtp.hf.CausalLMAdapter``), the page's images going in with the prefill."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model
        self._page: PageInputs | None = None

    @property
    def config(self) -> Any:
        return self.model.config

    def get_input_embeddings(self) -> nn.Module:
        return self.model.get_input_embeddings()

    def get_output_embeddings(self) -> nn.Module:
        return self.model.get_output_embeddings()

    @contextmanager
    def page(self, inputs: PageInputs) -> Iterator[None]:
        """Decode one page: its images go with the first call that has no cache."""
        self._page = inputs
        try:
            yield
        finally:
            self._page = None

    def forward(
        self,
        input_ids: Tensor | None = None,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        past_key_values: Any = None,
        use_cache: bool = True,
        output_hidden_states: bool = False,
        inputs_embeds: Tensor | None = None,
    ) -> Any:
        if input_ids is None or inputs_embeds is not None:
            raise ValueError("DeepSeek-OCR's remote model takes token ids, never embeddings")
        page, vision = self._page, self._no_image()
        if past_key_values is None and page is not None:
            if input_ids.shape != (1, len(page.input_ids)):
                raise ValueError("the prefill is not the page's prompt")
            vision = self._vision(page)
            self._page = None
        return self.model(
            input_ids=input_ids,
            attention_mask=attention_mask,
            position_ids=position_ids,
            past_key_values=past_key_values,
            use_cache=use_cache,
            output_hidden_states=output_hidden_states,
            return_dict=True,
            **vision,
        )

    def _placement(self) -> tuple[torch.device, torch.dtype]:
        weight = self.model.get_input_embeddings().weight
        return weight.device, weight.dtype

    def _vision(self, page: PageInputs) -> dict[str, Any]:
        device, dtype = self._placement()
        return {
            "images": [(page.crops.to(device, dtype), page.global_view.to(device, dtype))],
            "images_seq_mask": torch.tensor([page.images_seq_mask], device=device),
            "images_spatial_crop": torch.tensor(
                [[page.grid.columns, page.grid.rows]], dtype=torch.long, device=device
            ),
        }

    def _no_image(self) -> dict[str, Any]:
        # What the public infer passes for a prompt without an image: zeros (any shape: the
        # model only sums them), which it reads as "nothing to merge".
        device, dtype = self._placement()
        zeros = torch.zeros(1, 3, 1, 1, device=device, dtype=dtype)
        return {
            "images": [(zeros, zeros)],
            "images_seq_mask": None,
            "images_spatial_crop": torch.zeros(1, 2, dtype=torch.long, device=device),
        }
