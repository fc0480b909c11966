"""Office, OpenDocument and web documents against docling's reference Markdown: per format,
how close Folio's pages come to the reference and how fast they are made.

    python bench/formats.py [--format docx --format html ...] [--json out.json] [--files]
        [--table-format markdown|html|auto] [--page-images]

For every document of ``../shared/corpus/docling-testdata/<format>/sources`` that has a
reference, it runs what the service runs: ``inspect_document`` (the web process: type, refusals,
page count) and then each page through ``model.pipeline.transcribe_page`` (the worker; the
per-process conversion cache is emptied before each document, so every document pays for its
one conversion). The pages are joined and compared with the reference:

- text: 1 - normalised edit distance of the two texts' words, markup removed
  (``model.quality.realpages.similarity``, the figure QUALITY.md gives for PDF pages);
- markdown: rapidfuzz's ratio of the two Markdown texts with whitespace collapsed (headings,
  list marks and table pipes count: the structure);
- words: the share of the reference's words the pages hold (``realpages.words_kept``), and
  its lowest over the format's documents: what a main-content pick left out.

pages/s is pages over the worker's conversion time alone (one process, no queue); web ms is the
mean time of ``inspect_document``. Refused documents are listed with their answer and are not
in the means. Note that docling wrote the references with the same backends Folio uses, so a
figure near 100 % says Folio kept what docling makes, not that the conversion is perfect.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from rapidfuzz import fuzz  # noqa: E402

from model.documents import DocumentError, inspect_document  # noqa: E402
from model.engines.base import EngineOptions, PageInput  # noqa: E402
from model.formats import renditions, structure  # noqa: E402
from model.pipeline import office_page_image, transcribe_page  # noqa: E402
from model.quality.realpages import similarity, words_kept  # noqa: E402

CORPUS = REPO.parent / "shared" / "corpus" / "docling-testdata"
FORMATS = ("docx", "pptx", "xlsx", "odf", "html")


def run_document(path: Path, options: EngineOptions, page_images: bool = False) -> dict:
    data = path.read_bytes()
    reference = (path.parent.parent / "groundtruth" / f"{path.name}.md").read_text()
    started = time.perf_counter()
    try:
        info = inspect_document(data)
    except DocumentError as exc:
        return {"file": path.name, "refused": f"{exc.code}: {exc}"}
    web = time.perf_counter() - started
    structure._cache.clear()
    started = time.perf_counter()
    inputs = [PageInput(data, info.mime_type, n) for n in range(1, info.page_count + 1)]
    results = [transcribe_page(None, page, options) for page in inputs]
    worker = time.perf_counter() - started
    markdown = "\n\n".join(result.markdown for result in results if result.markdown.strip())
    row = {
        "file": path.name,
        "pages": info.page_count,
        "text": similarity(markdown, reference),
        "markdown": fuzz.ratio(" ".join(markdown.split()), " ".join(reference.split())) / 100,
        "words": words_kept(markdown, reference),
        "worker_seconds": worker,
        "web_seconds": web,
    }
    if page_images:
        # What the worker adds for the UI's page images: LibreOffice's PDF, then each page drawn.
        renditions._cache.clear()
        started = time.perf_counter()
        drawn = [office_page_image(page, options) for page in inputs]
        row["image_seconds"] = time.perf_counter() - started
        row["images"] = sum(images is not None for images in drawn)
    return row


def summary(rows: list[dict]) -> dict:
    done = [row for row in rows if "refused" not in row]
    pages = sum(row["pages"] for row in done)
    seconds = sum(row["worker_seconds"] for row in done)
    mean = lambda key: sum(row[key] for row in done) / len(done) if done else 0.0  # noqa: E731
    return {
        "files": len(rows),
        "refused": len(rows) - len(done),
        "pages": pages,
        "text": mean("text"),
        "markdown": mean("markdown"),
        "words": mean("words"),
        "words_lowest": min((row["words"] for row in done), default=0.0),
        "pages_per_second": pages / seconds if seconds else 0.0,
        "web_ms": 1000 * mean("web_seconds"),
        "image_s": mean("image_seconds") if done and "image_seconds" in done[0] else None,
        "images": sum(row.get("images", 0) for row in done),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--format", action="append", choices=FORMATS)
    parser.add_argument("--json", type=Path)
    parser.add_argument("--files", action="store_true", help="print every document's figures")
    parser.add_argument(
        "--table-format",
        default="markdown",
        choices=("markdown", "html", "auto"),
        help="the job's table format (docling's references write pipe tables: markdown)",
    )
    parser.add_argument(
        "--page-images",
        action="store_true",
        help="also time the page images (LibreOffice's PDF and each page drawn), per file",
    )
    args = parser.parse_args(argv)
    options = EngineOptions(table_format=args.table_format)
    warnings.simplefilter("ignore")
    # docling's import is paid once, before the clock runs.
    structure._backend(structure.types.DOCX)
    results = {}
    print(
        "| format | files | refused | pages | text | markdown | words (lowest) | pages/s "
        "| web ms/file |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for name in args.format or FORMATS:
        sources = sorted(
            path
            for path in (CORPUS / name / "sources").iterdir()
            if (CORPUS / name / "groundtruth" / f"{path.name}.md").exists()
        )
        rows = [run_document(path, options, args.page_images) for path in sources]
        results[name] = {"summary": summary(rows), "documents": rows}
        s = results[name]["summary"]
        print(
            f"| {name} | {s['files']} | {s['refused']} | {s['pages']} | {100 * s['text']:.1f} "
            f"| {100 * s['markdown']:.1f} | {100 * s['words']:.1f} ({100 * s['words_lowest']:.1f}) "
            f"| {s['pages_per_second']:.1f} | {s['web_ms']:.0f} |"
            + (f" images: {s['images']}, {s['image_s']:.1f} s/file" if s["image_s"] else "")
        )
    for name, result in results.items():
        for row in result["documents"]:
            if "refused" in row:
                print(f"{name}: {row['file']} refused ({row['refused']})")
            elif args.files:
                print(
                    f"{name}: {row['file']}: {row['pages']} pages, text {100 * row['text']:.1f}, "
                    f"markdown {100 * row['markdown']:.1f}, words {100 * row['words']:.1f}"
                )
    if args.json:
        args.json.write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
