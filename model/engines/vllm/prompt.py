"""jina-ocr-v1's prompt, shared by the in-process vLLM engine and the ``openai`` engine."""

from __future__ import annotations

JINA_OCR_PROMPT = (
    "Transcribe the provided document image into a clean Markdown format, "
    "preserving the natural reading order."
)
IMAGE_TOKEN = "<image>"


def vllm_prompt(instruction: str = JINA_OCR_PROMPT) -> str:
    """The text prompt vLLM expands: the image comes first, then the instruction."""
    return f"{IMAGE_TOKEN}\n{instruction}"
