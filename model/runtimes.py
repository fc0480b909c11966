"""Inference runtimes kept out of a process that reads no page: the web process.

PyMuPDF imports pymupdf4llm and PyMuPDF's layout package whenever they are installed
(``pymupdf/__init__.py``: ``try: import pymupdf.layout``, ``try: import pymupdf4llm``), and
the layout package loads its ONNX layout model as it is imported (``pymupdf.layout.activate()``
at the end of its ``__init__``), onnxruntime with it. The web process opens documents with
PyMuPDF (it counts an upload's pages and proves it can be read) but never lays a page out: the
local engine, in a worker, does. Measured on this machine (one run, alternating): importing
``model.documents`` took 169 MB of resident memory with them and 75 MB without, and about
5 s longer; every gunicorn worker paid it.

``layout_runtimes_off()`` marks both modules as absent (``sys.modules[name] = None``, which
Python's import system reads as "not installed"), so that PyMuPDF's own ``try`` leaves them
out; the local engine, which needs them, fails loudly in such a process instead of silently
reading without its layout model."""

from __future__ import annotations

import sys

# What PyMuPDF imports of its own accord, and what the local engine alone needs.
LAYOUT_MODULES = ("pymupdf.layout", "pymupdf4llm")


class RuntimeAlreadyLoaded(RuntimeError):
    """PyMuPDF was imported with its layout model before the process could refuse it."""


def layout_runtimes_off() -> None:
    """Keep PyMuPDF's layout model (and onnxruntime) out of this process. Call it before
    anything imports PyMuPDF: the web process's entry point does."""
    loaded = [name for name in LAYOUT_MODULES if sys.modules.get(name) is not None]
    if loaded:
        raise RuntimeAlreadyLoaded(
            f"{', '.join(loaded)} already imported: call layout_runtimes_off() before PyMuPDF is"
        )
    for name in LAYOUT_MODULES:
        sys.modules[name] = None  # type: ignore[assignment]
