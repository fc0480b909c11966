"""What ``folio convert`` will do: which files, where their outputs go, which are done already.

Folders are walked recursively and only files with a document's extension are taken (a file
named on the command line is always taken: the server judges it by its content). Outputs go
next to each input, or under ``-o OUT`` mirroring each folder argument's tree; ``report.pdf``
becomes ``report.md`` (``report.json``, ``report.blocks.json``, ``report.chunks.json``,
``report.searchable.pdf``), or ``report.pdf.md`` when another input of the same
stem would write the same file.
"""

from __future__ import annotations

import os
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

# Text, Markdown and CSV files are left out of folder walks (notes and data beside the
# documents, and a Markdown file's output would be itself); named on the command line they go.
DOCUMENT_SUFFIXES = frozenset(
    {".pdf", ".png", ".jpg", ".jpeg", ".tif", ".tiff", ".webp"}
    | {".docx", ".docm", ".pptx", ".pptm", ".xlsx", ".xlsm", ".odt", ".ods", ".odp"}
    | {".html", ".htm", ".epub", ".xps", ".oxps", ".fb2", ".mobi", ".cbz"}
)
# What each ``--format`` writes in place of the input's extension. The searchable PDF is
# ``NAME.searchable.pdf`` so that it never overwrites its input, and a folder walk leaves it
# out (it is this tool's output, not a document to convert again).
OUTPUT_SUFFIXES = {
    "md": ".md",
    "json": ".json",
    "blocks": ".blocks.json",
    "chunks": ".chunks.json",
    "pdf": ".searchable.pdf",
}


class PlanError(Exception):
    """The command line names something that cannot be converted as asked."""


@dataclass(frozen=True)
class Item:
    source: Path
    output: Path
    label: str  # the path as the user sees it, relative to its argument's parent
    size: int

    @property
    def partial_output(self) -> Path:
        """Where a partially failed file's pages go, so that they are not lost and the next
        run still tries the file again."""
        name, suffix = self.output.name, self.output.suffix
        for known in OUTPUT_SUFFIXES.values():
            if name.endswith(known):
                suffix = known
        return self.output.with_name(f"{name[: -len(suffix)]}.partial{suffix}")

    def is_fresh(self) -> bool:
        """Done by an earlier run: the output exists and is not older than the input."""
        try:
            return self.output.stat().st_mtime >= self.source.stat().st_mtime
        except FileNotFoundError:
            return False


def _walk(folder: Path) -> list[Path]:
    found = []
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found += [
            Path(root, name)
            for name in sorted(files)
            if not name.startswith(".")
            and Path(name).suffix.lower() in DOCUMENT_SUFFIXES
            and not name.lower().endswith(OUTPUT_SUFFIXES["pdf"])
        ]
    return found


def _inputs(paths: list[Path]) -> list[tuple[Path, Path]]:
    """(file, its path relative to the root that mirrors it) for every input."""
    pairs = []
    for path in paths:
        if path.is_dir():
            pairs += [(file, file.relative_to(path)) for file in _walk(path)]
        elif path.is_file():
            pairs.append((path, Path(path.name)))
        else:
            raise PlanError(f"{path}: no such file or folder")
    return pairs


def plan(paths: list[Path], *, out: Path | None, fmt: str) -> list[Item]:
    suffix = OUTPUT_SUFFIXES[fmt]
    pairs = _inputs(paths)
    seen: set[Path] = set()
    unique = []
    for file, relative in pairs:
        if file.resolve() not in seen:
            seen.add(file.resolve())
            unique.append((file, relative))

    def target(file: Path, relative: Path) -> Path:
        return (out / relative) if out is not None else file

    by_stem: dict[Path, list[Path]] = defaultdict(list)
    for file, relative in unique:
        by_stem[target(file, relative).with_suffix("")].append(file)
    items: list[Item] = []
    outputs: dict[Path, Path] = {}
    for file, relative in unique:
        base = target(file, relative)
        crowded = len(by_stem[base.with_suffix("")]) > 1
        output = base.with_name(base.name + suffix) if crowded else base.with_suffix(suffix)
        if output.resolve() == file.resolve():
            raise PlanError(f"{file}: its output would overwrite it; name a document")
        if output in outputs:
            raise PlanError(f"{outputs[output]} and {file} would both write {output}")
        outputs[output] = file
        items.append(Item(source=file, output=output, label=str(file), size=file.stat().st_size))
    return items
