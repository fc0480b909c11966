"""jina-ocr-v1 (and plain DeepSeek-OCR checkpoints) on vLLM, in the worker process.

Only ``engine.py`` imports vLLM, and only when the engine loads: the rest of this package
(configuration, prompt, metrics) stays importable where vLLM is not installed.
"""
