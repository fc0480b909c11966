"""jina-ocr-v1's prompt, shared by the in-process vLLM engine and the ``openai`` engine."""

from __future__ import annotations

JINA_OCR_PROMPT = (
    "Transcribe the provided document image into a clean Markdown format, "
    "preserving the natural reading order."
)
# The longer prompt other public ports send, which some call the model card's: the short one,
# then how to write formulas, tables, images, headers and footers (docs/GPU.md cites both).
JINA_OCR_LONG_PROMPT = (
    JINA_OCR_PROMPT + "\n"
    "Convert all formulas into LaTeX format. Inline formulas should be enclosed in `$ $`. "
    "Display (block) formulas should be enclosed in `$$ $$.\n"
    "Convert tables into HTML format (using <table border='1'><tr><td> tags).\n"
    "Ignore all graphical content in the image document. Do not describe or convert images.\n"
    "Remove the headers and footers, but keep references and footnotes."
)
PROMPTS = {"short": JINA_OCR_PROMPT, "long": JINA_OCR_LONG_PROMPT}
IMAGE_TOKEN = "<image>"


def prompt_name(instruction: str) -> str:
    """``short`` or ``long`` for the two public prompts, ``custom`` for any other."""
    return next((name for name, text in PROMPTS.items() if text == instruction), "custom")


def vllm_prompt(instruction: str = JINA_OCR_PROMPT) -> str:
    """The text prompt vLLM expands: the image comes first, then the instruction."""
    return f"{IMAGE_TOKEN}\n{instruction}"
