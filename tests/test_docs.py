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
