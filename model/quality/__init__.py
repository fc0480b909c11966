"""Transcription quality: olmOCR-Bench-style page tests and their scorer (``checks``), the
command that runs an engine over a corpus (``run``), the generated corpus (``corpus``) and the
per-page quality signals the service attaches to every page (``signals``)."""
