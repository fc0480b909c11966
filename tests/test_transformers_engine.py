"""The `transformers` engine end to end on a tiny, randomly initialised vision-language model.

No real checkpoint exists here, so the test builds one with the Hugging Face calling
convention: a real ``transformers`` Llama decoder (its cache, its masks, its hidden states)
behind ``TinyOcrModel``, whose vision side is ``VisionStub``, a boundary that maps a page
image to a few embedding vectors (no real vision encoder), and ``CharProcessor``, a
character-level stand-in for the checkpoint's processor. The checkpoint directory holds real
safetensors shards, with or without FastMTP draft tensors, which the engine reads itself.
Float64, so that one verifier pass over K+1 positions and one over a single position never
round a near tie apart: what is compared is the decoding algorithm.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from tests import FASTMTP_EXTRA

# PyTorch models built and decoded on the CPU: tens of seconds, so not in `make test-fast`.
pytestmark = pytest.mark.slow

torch = pytest.importorskip("torch", reason=FASTMTP_EXTRA)
transformers = pytest.importorskip("transformers", reason=FASTMTP_EXTRA)
safetensors_torch = pytest.importorskip("safetensors.torch", reason=FASTMTP_EXTRA)

from torch import Tensor, nn  # noqa: E402

from model import gundam  # noqa: E402
from model.config import ConfigError  # noqa: E402
from model.engines import EngineError, EngineOptions, PageInput, engine_class  # noqa: E402
from model.engines.transformers_config import TransformersConfig  # noqa: E402
from model.engines.transformers_engine import (  # noqa: E402
    PROMPT,
    Checkpoint,
    TransformersEngine,
    multimodal_prefill,
)
from model.fastmtp import BlockConfig, MTPDraftBlock  # noqa: E402
from model.rendering import open_page_image  # noqa: E402
from tests import documents  # noqa: E402
from tests.vllm import tiny_checkpoint, tiny_draft  # noqa: E402
from tests.vllm.pages import a4_pdf, small_png  # noqa: E402

ENV_MODEL_DIR = "FOLIO_TRANSFORMERS_MODEL_DIR"
CHARS = "abcdefghijklmnopqrstuvwxyz #|-.\n"
PAD, EOS, IMAGE = 0, 1, 2
VOCAB = 3 + len(CHARS)
IMAGE_TOKENS = 4  # what VisionStub makes of a page: a 2 x 2 grid of vectors
HIDDEN, HEADS, KV_HEADS, INTER = 16, 2, 1, 24
MAX_NEW = 24


class VisionStub(nn.Module):
    """Test boundary, not a vision encoder: mean colour of each cell of a 2 x 2 grid,
    projected to the decoder's width. Enough for different pages to prefill differently."""

    def __init__(self) -> None:
        super().__init__()
        self.proj = nn.Linear(3, HIDDEN)

    def forward(self, pixel_values: Tensor) -> Tensor:
        cells = nn.functional.adaptive_avg_pool2d(pixel_values, 2)  # (N, 3, 2, 2)
        return self.proj(cells.flatten(2).transpose(1, 2))  # (N, 4, H)


class TinyOcrModel(nn.Module):
    """A vision-language model with the Transformers calling convention, in miniature."""

    def __init__(self) -> None:
        super().__init__()
        self.config = transformers.LlamaConfig(
            vocab_size=VOCAB,
            hidden_size=HIDDEN,
            intermediate_size=INTER,
            num_hidden_layers=2,
            num_attention_heads=HEADS,
            num_key_value_heads=KV_HEADS,
            max_position_embeddings=256,
            eos_token_id=EOS,
        )
        self.config.image_token_id = IMAGE
        self.language_model = transformers.LlamaForCausalLM(self.config)
        self.vision = VisionStub()

    def get_input_embeddings(self) -> nn.Module:
        return self.language_model.get_input_embeddings()

    def get_output_embeddings(self) -> nn.Module:
        return self.language_model.get_output_embeddings()

    def get_image_features(self, pixel_values: Tensor) -> list[Tensor]:
        return list(self.vision(pixel_values))

    def forward(
        self,
        input_ids: Tensor | None = None,
        inputs_embeds: Tensor | None = None,
        attention_mask: Tensor | None = None,
        position_ids: Tensor | None = None,
        cache=None,
        use_cache: bool = True,
        output_hidden_states: bool = False,
    ):
        return self.language_model(
            input_ids=input_ids,
            inputs_embeds=inputs_embeds,
            attention_mask=attention_mask,
            position_ids=position_ids,
            cache=cache,
            use_cache=use_cache,
            output_hidden_states=output_hidden_states,
        )


class CharProcessor:
    """Stand-in for a checkpoint's processor: one token per character, the image placeholder
    expanded to IMAGE_TOKENS ids, pixel values at 8 x 8."""

    image_token = "<image>"
    eos_token_id = EOS

    @property
    def tokenizer(self) -> CharProcessor:
        return self

    def __call__(self, *, images, text: str, return_tensors: str) -> dict[str, Tensor]:
        assert return_tensors == "pt" and len(images) == 1
        before, _, after = text.partition(self.image_token)
        ids = self.encode(before) + [IMAGE] * IMAGE_TOKENS + self.encode(after)
        pixels = torch.tensor(np.asarray(images[0].convert("RGB").resize((8, 8))))
        pixel_values = pixels.permute(2, 0, 1)[None].double() / 255
        return {"input_ids": torch.tensor([ids]), "pixel_values": pixel_values}

    def encode(self, text: str) -> list[int]:
        return [3 + CHARS.index(c) for c in text.lower() if c in CHARS]

    def decode(self, ids: list[int], skip_special_tokens: bool = True) -> str:
        return "".join(CHARS[i - 3] for i in ids if i >= 3 or not skip_special_tokens)


def _write_checkpoint(path: Path, *, with_draft: bool, seed: int = 0) -> Path:
    """A checkpoint folder: a decoder tensor, plus jina-ocr-v1-named draft tensors if asked."""
    path.mkdir(parents=True, exist_ok=True)
    tensors = {"model.norm.weight": torch.ones(HIDDEN)}
    if with_draft:
        torch.manual_seed(seed)
        block = MTPDraftBlock(BlockConfig(HIDDEN, HEADS, KV_HEADS, INTER), VOCAB)
        for name, t in block.state_dict().items():
            key = "shared_head.norm.weight" if name == "norm.weight" else name
            tensors[f"mtp_module.{key.removeprefix('block.')}"] = t.clone().contiguous()
    safetensors_torch.save_file(tensors, str(path / "model-00001-of-00001.safetensors"))
    return path


@pytest.fixture(scope="module")
def tiny() -> Checkpoint:
    torch.manual_seed(1234)
    return Checkpoint(model=TinyOcrModel().double().eval(), processor=CharProcessor())


def _engine(path: Path, tiny: Checkpoint, **kwargs) -> TransformersEngine:
    def loader(model_dir: Path, device, dtype) -> Checkpoint:
        assert model_dir == path and dtype == torch.float64
        return tiny

    kwargs.setdefault("max_new_tokens", MAX_NEW)
    return TransformersEngine(path, loader=loader, device="cpu", dtype=torch.float64, **kwargs)


PAGES = {
    "png": PageInput(data=documents.png_page(), mime_type="image/png", page_number=1),
    "pdf": PageInput(data=documents.born_digital_pdf(), mime_type="application/pdf", page_number=2),
}


@pytest.mark.parametrize("kind", sorted(PAGES))
def test_it_transcribes_a_page_with_fastmtp_and_writes_what_plain_greedy_writes(
    tmp_path, tiny, kind
):
    page = PAGES[kind]
    spec = _engine(_write_checkpoint(tmp_path / "draft", with_draft=True), tiny, k=3)
    plain = _engine(_write_checkpoint(tmp_path / "plain", with_draft=False), tiny)
    spec.load()
    plain.load()

    got = spec.transcribe(page, EngineOptions())
    reference = plain.transcribe(page, EngineOptions())

    assert spec.speculative and not plain.speculative
    assert got.markdown and got.markdown == reference.markdown
    assert got.output_tokens == reference.output_tokens > 0
    assert got.input_tokens == IMAGE_TOKENS + len(CharProcessor().encode("\n" + PROMPT))
    assert got.method == "vlm" and got.engine_seconds > 0 and got.render_seconds > 0
    assert reference.extra["decoding"] == "greedy"
    extra = got.extra
    assert extra["decoding"] == "fastmtp" and extra["fastmtp_k"] == 3
    assert extra["verifier_passes"] > 0
    assert extra["spec_decode_num_drafts"] == extra["verifier_passes"]
    assert extra["spec_decode_num_draft_tokens"] == 3 * extra["spec_decode_num_drafts"]
    accepted = extra["spec_decode_num_accepted_tokens"]
    # One token from the prefill, then accepted + 1 per pass (the last pass may overshoot
    # the budget, and its surplus is cut).
    assert got.output_tokens <= 1 + accepted + extra["verifier_passes"]
    assert len(extra["acceptance_rates"]) == 3
    assert extra["finished"] in {"stop", "length"}


def test_different_pages_prefill_differently_through_the_image_embeddings(tmp_path, tiny):
    engine = _engine(_write_checkpoint(tmp_path / "draft", with_draft=True), tiny, k=2)
    engine.load()
    embeds = [
        multimodal_prefill(
            tiny.model, tiny.processor, open_page_image(p.data, p.mime_type, p.page_number), PROMPT
        )[1]
        for p in PAGES.values()
    ]
    assert not torch.equal(embeds[0][:IMAGE_TOKENS], embeds[1][:IMAGE_TOKENS])
    assert torch.equal(embeds[0][IMAGE_TOKENS:], embeds[1][IMAGE_TOKENS:])


def test_fastmtp_k_zero_decodes_plainly_even_with_a_draft_head(tmp_path, tiny):
    engine = _engine(_write_checkpoint(tmp_path / "draft", with_draft=True), tiny, k=0)
    result = engine.transcribe(PAGES["png"], EngineOptions())
    assert not engine.speculative and result.extra["decoding"] == "greedy"


def test_it_reads_the_model_directory_from_the_environment(tmp_path, tiny, monkeypatch):
    path = _write_checkpoint(tmp_path / "ckpt", with_draft=False)
    monkeypatch.setenv(ENV_MODEL_DIR, str(path))
    seen = []

    def loader(model_dir, device, dtype):
        seen.append(model_dir)
        return tiny

    TransformersEngine(loader=loader, device="cpu", dtype=torch.float64).load()
    assert seen == [path]


def test_it_refuses_to_load_without_a_model_directory(monkeypatch, tmp_path):
    monkeypatch.delenv(ENV_MODEL_DIR, raising=False)
    with pytest.raises(ConfigError, match=ENV_MODEL_DIR):
        TransformersEngine().load()
    with pytest.raises(EngineError, match="not a directory"):
        TransformersEngine(tmp_path / "missing").load()


def test_a_draft_head_that_does_not_fit_fails_the_load_not_a_page(tmp_path, tiny):
    path = _write_checkpoint(tmp_path / "bad", with_draft=True)
    tensors = safetensors_torch.load_file(str(path / "model-00001-of-00001.safetensors"))
    tensors["mtp_module.mlp.experts.0.up_proj.weight"] = torch.zeros(1)
    safetensors_torch.save_file(tensors, str(path / "model-00001-of-00001.safetensors"))
    with pytest.raises(EngineError, match="FastMTP head"):
        _engine(path, tiny, k=3).load()


def test_the_registry_names_the_engine_and_importing_engines_needs_no_torch():
    assert engine_class("transformers") is TransformersEngine
    code = (
        "import sys, model, model.engines; "
        "assert 'torch' not in sys.modules, 'model.engines imported torch'"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_its_settings_are_read_and_refused_by_name():
    config = TransformersConfig.from_env(
        {
            ENV_MODEL_DIR: "/models/x",
            "FOLIO_TRANSFORMERS_FASTMTP_K": "1",
            "FOLIO_TRANSFORMERS_DTYPE": "bfloat16",
        }
    )
    assert (str(config.model_dir), config.fastmtp_k, config.dtype) == ("/models/x", 1, "bfloat16")
    with pytest.raises(ConfigError, match="FOLIO_TRANSFORMERS_DTYPE='fp4' is not one of"):
        TransformersConfig.from_env({ENV_MODEL_DIR: "/m", "FOLIO_TRANSFORMERS_DTYPE": "fp4"})
    with pytest.raises(ConfigError, match="FOLIO_TRANSFORMERS_FASTMTP_K=-1 is below"):
        TransformersConfig.from_env({ENV_MODEL_DIR: "/m", "FOLIO_TRANSFORMERS_FASTMTP_K": "-1"})


# --- a checkpoint in jina-ocr-v1's layout, loaded through its own remote code ------------------


@pytest.fixture(scope="module")
def jina_layout(tmp_path_factory) -> Path:
    """The vLLM tier's tiny checkpoint: DeepSeek-OCR's config keys, tokenizer and chat template,
    remote code named by ``auto_map``, and a FastMTP head copied from the decoder."""
    return tiny_checkpoint.write(tmp_path_factory.mktemp("tiny-jina-ocr"))


def _remote(path: Path, k: int) -> TransformersEngine:
    return TransformersEngine(path, k=k, device="cpu", dtype=torch.float32, max_new_tokens=40)


def test_a_remote_code_checkpoint_decodes_through_its_own_model_and_fastmtp_is_lossless(
    jina_layout, monkeypatch
):
    monkeypatch.setenv("FOLIO_TRANSFORMERS_TRUST_REMOTE_CODE", "1")
    plain, spec = _remote(jina_layout, 0), _remote(jina_layout, 3)
    plain.load()
    spec.load()
    # The checkpoint's own class, from its own files, as trust_remote_code loads it.
    assert type(plain._checkpoint.model).__name__ == "TinyOcrForCausalLM"
    assert plain._checkpoint.convention == "deepseek-ocr" and spec.speculative

    prompt_tail = len(PROMPT.split())
    pages = {
        "pdf": (PageInput(data=a4_pdf(), mime_type="application/pdf", page_number=1), (2, 3)),
        "png": (PageInput(data=small_png(), mime_type="image/png", page_number=1), (1, 1)),
    }
    for name, (page, grid) in pages.items():
        reference = plain.transcribe(page, EngineOptions())
        got = spec.transcribe(page, EngineOptions())
        # What the checkpoint was built to say (the remote model refuses a token layout whose
        # image positions are not its feature count, so reaching here checks the layout too).
        assert reference.markdown.split() == tiny_checkpoint.expected_text().split(), name
        assert reference.output_tokens == len(tiny_checkpoint.expected_output())
        placeholders = gundam.placeholder_count(gundam.Grid(*grid))
        assert reference.input_tokens == 1 + placeholders + prompt_tail, name
        assert reference.extra["decoding"] == "greedy" and reference.extra["finished"] == "stop"
        # FastMTP through Folio's own decoder: the same tokens, and the copied head accepted.
        assert got.markdown == reference.markdown and got.output_tokens == reference.output_tokens
        assert got.extra["decoding"] == "fastmtp" and got.extra["fastmtp_k"] == 3
        assert got.extra["spec_decode_num_accepted_tokens"] > 0, got.extra
        assert got.extra["tokens_per_step"] > 1, got.extra


def test_inputs_follow_deepseek_ocrs_public_layout(jina_layout):
    from transformers import AutoTokenizer

    from model.engines.deepseek_ocr_hf import page_inputs

    tokenizer = AutoTokenizer.from_pretrained(jina_layout, local_files_only=True)
    image = open_page_image(a4_pdf(), "application/pdf", 1)
    inputs = page_inputs(tokenizer, image, PROMPT)
    image_id = tokenizer.convert_tokens_to_ids("<image>")
    columns, rows = inputs.grid.columns, inputs.grid.rows
    assert (columns, rows) == (2, 3)
    # BOS, then (16 + 1)·16 + 1 for the global view and (10·w + 1)·(10·h) for the tiles.
    expected = 17 * 16 + 1 + (10 * columns + 1) * (10 * rows)
    assert inputs.input_ids[0] == tokenizer.bos_token_id
    assert inputs.input_ids[1 : 1 + expected] == [image_id] * expected
    assert inputs.images_seq_mask == [i == image_id for i in inputs.input_ids]
    assert tokenizer.decode(inputs.input_ids[1 + expected :]) == " ".join(PROMPT.split())
    # The global view padded to 1024 with (127, 127, 127), tiles of 640, mean and std 0.5.
    assert inputs.global_view.shape == (1, 3, 1024, 1024)
    assert inputs.crops.shape == (columns * rows, 3, 640, 640)
    corner = inputs.global_view[0, :, 0, 0]
    assert torch.allclose(corner, torch.full((3,), (127 / 255 - 0.5) / 0.5))
    assert inputs.crops.min() >= -1 and inputs.crops.max() <= 1

    small = page_inputs(tokenizer, open_page_image(small_png(), "image/png", 1), PROMPT)
    assert small.grid.tiles == 0 and not small.crops.any()  # "no tiles" is all zeros
    assert sum(small.images_seq_mask) == 17 * 16 + 1


def test_remote_code_runs_only_when_allowed(jina_layout, monkeypatch):
    monkeypatch.delenv("FOLIO_TRANSFORMERS_TRUST_REMOTE_CODE", raising=False)
    with pytest.raises(EngineError, match="FOLIO_TRANSFORMERS_TRUST_REMOTE_CODE=1"):
        _remote(jina_layout, 0).load()


def test_the_published_draft_is_accepted_whole_only_when_wired_as_trained(
    jina_layout, tmp_path, monkeypatch
):
    """The tiny head (``tests/vllm/tiny_draft.py``) can only be right when it reads the target's
    hidden state, recycles its own post-norm state and reads the page's features at image
    positions: acceptance 1.0 as wired, near 0 where one of them is mis-wired."""
    from model.fastmtp import decoding
    from model.fastmtp.draft import MTPDraftBlock

    monkeypatch.setenv("FOLIO_TRANSFORMERS_TRUST_REMOTE_CODE", "1")
    page = PageInput(data=small_png(), mime_type="image/png", page_number=1)
    expected = tiny_checkpoint.expected_text().split()

    def rates(path: Path, dtype=torch.float32) -> list[float]:
        engine = TransformersEngine(path, k=3, device="cpu", dtype=dtype, max_new_tokens=40)
        engine.load()
        got = engine.transcribe(page, EngineOptions())
        # Whatever the draft says, the verifier decides: the text never changes.
        assert got.markdown.split() == expected
        return got.extra["acceptance_rates"]

    # As trained, in float32 and in the checkpoint's own bfloat16: every draft accepted.
    assert rates(jina_layout) == [1.0, 1.0, 1.0]
    assert rates(jina_layout, torch.bfloat16) == [1.0, 1.0, 1.0]
    # The two halves of eh_proj swapped ([hidden; embedding]): the hidden state is misread.
    swapped = tiny_checkpoint.write(tmp_path / "swapped", draft=tiny_draft.MISWIRED)
    assert max(rates(swapped)) < 0.1
    # The recursive steps fed the pre-norm state: the first draft stays right, the others not.
    with monkeypatch.context() as wrong:
        wrong.setattr(MTPDraftBlock, "recycle", lambda self, g: g)
        first, *recursive = rates(jina_layout)
    assert first == 1.0 and max(recursive) < 0.1
    # The draft fed the <image> token's embedding at image positions instead of the page's.
    with monkeypatch.context() as wrong:
        wrong.setattr(decoding, "_draft_prompt_embeds", lambda *args: None)
        assert max(rates(jina_layout)) < 0.1
