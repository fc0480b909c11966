"""What the page-drawing server (``model.page_images``) imports once, so that every child it
forks starts with PyMuPDF and Pillow loaded.

PyMuPDF imports its optional layout analyser when it is installed (over a second, and drawing
never uses it): refusing that import here, in the server only, keeps the server's start short.
"""

from __future__ import annotations

import sys

sys.modules.setdefault("pymupdf.layout", None)  # type: ignore[arg-type]

import model.rendering  # noqa: E402, F401  (imported for the children)
