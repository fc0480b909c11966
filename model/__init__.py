"""Folio's document and engine layer: pure Python, importable without Django or Celery."""
