"""The documentation points at files that exist in the repository."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def test_every_relative_link_in_the_docs_resolves_inside_the_repository():
    broken = []
    for doc in DOCS:
        for target in LINK.findall(doc.read_text()):
            if re.match(r"[a-z]+:", target):
                continue  # http(s), mailto: not files
            path = (doc.parent / target).resolve()
            if not path.exists() or ROOT not in (path, *path.parents):
                broken.append(f"{doc.relative_to(ROOT)} → {target}")
    assert not broken, broken


# A URL in a command line of the docs, up to the first space or quote.
COMMAND_URL = re.compile(r"https?://[^\s'\"]+")


def test_no_command_in_the_docs_sends_a_fragment_that_curl_would_drop():
    """curl (like a browser) keeps a URL's `#...` to itself: a page written `#3` in a command
    never reaches the server, so the docs write it `%233`."""
    dropped = []
    for doc in DOCS:
        for line in doc.read_text().splitlines():
            if not line.lstrip().startswith("curl "):
                continue
            for url in COMMAND_URL.findall(line.split("  #", 1)[0]):  # a shell comment after
                if "#" in url:
                    dropped.append(f"{doc.relative_to(ROOT)}: {url}")
    assert not dropped, dropped
    assert "paper.pdf%233" in (ROOT / "README.md").read_text()


def _installed_tesseract_languages(path: Path) -> set[str]:
    return set(re.findall(r"tesseract-ocr-([a-z_]+)\b", path.read_text())) - {"code"}


def test_the_readme_names_every_ocr_language_the_image_and_ci_install():
    """A newcomer finds the scan languages in the README, not only in docs/QUALITY.md: its
    "OCR languages" section names RapidOCR's bundled ones and each Tesseract language the
    image and CI install, by its code, the same set in all three places."""
    readme = (ROOT / "README.md").read_text()
    section = readme.split("## OCR languages", 1)[1].split("\n## ", 1)[0]
    image = _installed_tesseract_languages(ROOT / "Dockerfile")
    ci = _installed_tesseract_languages(ROOT / ".ci" / "run")
    assert image == ci and len(image) >= 8, (image, ci)
    # Written "Korean (`kor`)": a name, then its code in parentheses.
    named = set(re.findall(r"[A-Z][a-z]+\s+\(`([a-z_]+)`\)", section))
    assert named == image, (named, image)
    for language in ("Chinese", "Japanese", "English", "Korean", "Arabic"):
        assert language in section, language
    assert "#ocr-languages" in readme  # the API tables link to it
