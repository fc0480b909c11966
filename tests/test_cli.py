"""The `folio` command line against a real running server (live_server over HTTP, real
worker processes), run in-process through main(argv), and once as the installed console
script in a process of its own."""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from folio_client.cli import main
from tests import documents
from tests.test_sdk import ScriptedProxy

pytestmark = pytest.mark.django_db(transaction=True)

CORPUS = Path(__file__).resolve().parents[1].parent / "shared" / "corpus" / "pdf-samples"
CORPUS_FILES = ("001-trivial/minimal-document.pdf", "004-pdflatex-4-pages/pdflatex-4-pages.pdf")


@pytest.fixture
def key(make_user) -> str:
    from webapp.accounts.services import api_key_create

    return api_key_create(user=make_user("alice")).secret


@pytest.fixture
def folio(live_server, key, capsys):
    """``folio ARGS...`` in this process against the live server: (exit code, stdout, stderr)."""

    def run(*argv: str, url: str | None = None) -> tuple[int, str, str]:
        capsys.readouterr()
        code = main([*argv, "--url", url or live_server.url, "--api-key", key])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def put(root: Path, relative: str, data: bytes) -> Path:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)
    return path


@pytest.fixture
def tree(tmp_path) -> Path:
    root = tmp_path / "in"
    put(root, "report.pdf", documents.born_digital_pdf())
    put(root, "scans/scan.pdf", documents.scanned_pdf())
    put(root, "scans/page.png", documents.png_page())
    put(root, "scans/photos/photo.jpg", documents.jpeg_page())
    put(root, "scans/notes.txt", b"not a document: folders are walked by type")
    return root


def outputs(root: Path) -> dict[str, Path]:
    return {
        str(path.relative_to(root)): path
        for path in sorted(root.rglob("*"))
        if path.is_file() and not path.name.startswith(".")
    }


def job_count() -> int:
    from webapp.jobs.models import Job

    return Job.objects.count()


@pytest.mark.slow
def test_a_folder_tree_is_converted_into_a_mirrored_tree_and_a_second_run_skips_it_all(
    folio, worker, tree, tmp_path
):
    out = tmp_path / "out"

    code, stdout, _ = folio("convert", str(tree), "-o", str(out), "--concurrency", "4", "--json")

    summary = json.loads(stdout)
    assert code == 0, summary
    assert sorted(outputs(out)) == [
        "report.md",
        "scans/page.md",
        "scans/photos/photo.md",
        "scans/scan.md",
    ]
    written = outputs(out)
    for marker in documents.BORN_DIGITAL_PAGE_MARKERS:
        assert marker in written["report.md"].read_text()
    for name in ("scans/page.md", "scans/scan.md", "scans/photos/photo.md"):
        assert "invoice" in written[name].read_text().lower()
    assert (summary["converted"], summary["failed"], summary["pages"]) == (4, 0, 6)
    assert summary["tokens"] > 0 and summary["pages_per_second"] > 0
    jobs_before = job_count()
    times_before = {name: path.stat().st_mtime_ns for name, path in written.items()}

    again, stdout, _ = folio("convert", str(tree), "-o", str(out), "--json")

    assert again == 0
    assert json.loads(stdout)["skipped"] == 4
    assert job_count() == jobs_before
    assert {name: path.stat().st_mtime_ns for name, path in outputs(out).items()} == times_before

    # An input changed since its output was written is converted again, and only that one.
    later = time.time() + 5
    os.utime(tree / "scans/page.png", (later, later))
    third, stdout, _ = folio("convert", str(tree), "-o", str(out), "--json")

    summary = json.loads(stdout)
    assert third == 0
    assert (summary["converted"], summary["skipped"]) == (1, 3)
    assert [r["input"] for r in summary["results"] if r["status"] == "converted"] == [
        str(tree / "scans/page.png")
    ]


@pytest.mark.slow
def test_a_corrupt_file_fails_with_its_reason_while_the_others_succeed_and_the_exit_code_says_so(
    folio, worker, tmp_path
):
    root = tmp_path / "batch"
    put(root, "good/report.pdf", documents.born_digital_pdf())
    put(root, "bad/broken.pdf", documents.corrupt_pdf())

    code, stdout, stderr = folio("convert", str(root), "--format", "json", "--pages", "1-2")

    assert code == 1
    assert sorted(outputs(root)) == ["bad/broken.pdf", "good/report.json", "good/report.pdf"]
    result = json.loads((root / "good/report.json").read_text())
    assert [page["number"] for page in result["pages"]] == [1, 2]
    assert documents.BORN_DIGITAL_PAGE_MARKERS[1] in result["pages"][1]["markdown"]
    assert "1 converted, 0 skipped, 1 failed" in stdout
    failure = next(line for line in stdout.splitlines() if line.startswith("failed:"))
    assert str(root / "bad/broken.pdf") in failure and "damaged" in failure
    assert "broken.pdf" in stderr  # the line printed as it happened, before the summary

    # The next run skips the converted file and tries the failed one again.
    again, stdout, _ = folio("convert", str(root), "--format", "json", "--pages", "1-2", "--json")

    summary = json.loads(stdout)
    assert again == 1
    assert (summary["skipped"], summary["failed"]) == (1, 1)
    assert "damaged" in next(r["reason"] for r in summary["results"] if r["status"] == "failed")


@pytest.mark.slow
def test_a_server_answering_429_with_retry_after_is_waited_out_not_hammered(
    folio, live_server, worker, tmp_path
):
    proxy = ScriptedProxy(live_server.url, script=["429:1", "429:1"])
    root = tmp_path / "in"
    put(root, "one.pdf", documents.born_digital_pdf())
    put(root, "two.png", documents.png_page())
    try:
        code, stdout, _ = folio(
            "convert", str(root), "--pages", "1", "--concurrency", "4", "--json", url=proxy.url
        )
    finally:
        proxy.close()

    assert code == 0, stdout
    assert json.loads(stdout)["converted"] == 2
    posts = proxy.requests_to("POST", "/v1/jobs")
    assert sorted(seen.answer for seen in posts) == ["429:1", "429:1", "forward", "forward"]
    # Both files' first tries were on their way at once; each try after that waited out
    # the Retry-After that the client had been given, whichever file it was for.
    refused = max(seen.at for seen in posts if seen.answer == "429:1")
    retries = [seen.at - refused for seen in posts if seen.answer == "forward"]
    assert min(retries) >= 0.95, retries


@pytest.mark.slow
@pytest.mark.skipif(not CORPUS.is_dir(), reason=f"the shared corpus is not at {CORPUS}")
def test_real_pdfs_from_the_shared_corpus_are_converted(folio, worker, tmp_path):
    root = tmp_path / "corpus"
    for relative in CORPUS_FILES:
        put(root, relative, (CORPUS / relative).read_bytes())

    code, stdout, _ = folio("convert", str(root), "--concurrency", "4", "--json")

    summary = json.loads(stdout)
    assert code == 0, summary
    assert summary["pages"] == 1 + 4
    for relative in CORPUS_FILES:
        markdown = (root / relative).with_suffix(".md").read_text()
        assert len(markdown.split()) > 5


@pytest.mark.slow
def test_jobs_engines_and_health_answer_from_the_server(folio, live_server, key, worker, tmp_path):
    from folio_client import Client

    with Client(live_server.url, key) as client:
        job = client.submit(put(tmp_path, "report.pdf", documents.born_digital_pdf()), pages="1")

    code, stdout, _ = folio("jobs", "wait", job.id, "--timeout", "60")
    assert (code, stdout.split()) == (0, [job.id, "succeeded"])
    code, stdout, _ = folio("jobs", "list", "--json")
    assert code == 0 and [item["id"] for item in json.loads(stdout)] == [job.id]
    code, stdout, _ = folio("jobs", "show", job.id)
    assert code == 0 and "succeeded" in stdout and "report.pdf" in stdout
    code, _, stderr = folio("jobs", "cancel", job.id)
    assert code == 1 and "already ended" in stderr
    code, stdout, _ = folio("engines", "--json")
    assert code == 0 and "local" in json.loads(stdout)
    code, stdout, _ = folio("health", "--json")
    health = json.loads(stdout)
    assert code == 0 and health["ready"] and "local" in health["checks"]["workers"]["engines"]


@pytest.mark.slow
def test_the_console_script_converts_a_file_with_its_settings_from_the_environment(
    live_server, key, worker, tmp_path
):
    script = Path(sys.executable).parent / "folio"
    source = put(tmp_path, "page.png", documents.png_page())
    env = {**os.environ, "FOLIO_URL": live_server.url, "FOLIO_API_KEY": key}

    done = subprocess.run(
        [str(script), "convert", str(source), "--json"],
        env=env, capture_output=True, text=True, timeout=120,
    )  # fmt: skip

    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["converted"] == 1
    assert "invoice" in (tmp_path / "page.md").read_text().lower()


@pytest.mark.slow
def test_an_interrupted_run_cancels_the_jobs_it_had_in_flight_and_exits_130(
    live_server, key, worker, tmp_path
):
    from webapp.jobs.models import Job, Page

    source = put(tmp_path, "bundle.tiff", documents.multipage_tiff(8))
    env = {**os.environ, "FOLIO_URL": live_server.url, "FOLIO_API_KEY": key}
    command = [sys.executable, "-m", "folio_client.cli", "convert", str(source), "--quiet"]
    process = subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 30
    while not Job.objects.filter(pages_done__gte=1).exists() and time.monotonic() < deadline:
        time.sleep(0.1)

    process.send_signal(signal.SIGINT)
    process.communicate(timeout=30)

    assert process.returncode == 130
    assert list(Job.objects.values_list("status", flat=True)) == ["cancelled"]
    assert not (tmp_path / "bundle.md").exists()
    # The module's worker finishes the pages it had already started; wait for them, so that
    # no worker query races the flush of this test's rows (a deadlock on a busy host).
    deadline = time.monotonic() + 60
    while Page.objects.filter(status=Page.Status.RUNNING).exists() and time.monotonic() < deadline:
        time.sleep(0.2)


def test_the_live_display_shows_pages_of_an_estimated_total_and_a_line_per_file(tmp_path):
    from rich.console import Console

    from folio_client.convert import Outcome
    from folio_client.plan import plan
    from folio_client.progress import LiveDisplay

    for name in ("a.pdf", "b.pdf", "c.pdf"):
        put(tmp_path / "in", name, b"%PDF-1.7")
    a, b, c = plan([tmp_path / "in"], out=None, fmt="md")
    screen = io.StringIO()
    console = Console(file=screen, force_terminal=True, width=120)

    with LiveDisplay(console, files=3) as display:
        display.started(a)
        display.progressed(a, done=1, total=4, status="running")
        display.started(b)
        display.live.refresh()
        # b's pages are not known yet, nor c's: 4 per file so far, so about 12 in all.
        assert "files 0/3" in screen.getvalue() and "1/~12 pages" in screen.getvalue()
        assert "a.pdf" in screen.getvalue() and "1/4 running" in screen.getvalue()
        display.progressed(b, done=0, total=1, status="queued")
        display.progressed(a, done=4, total=4, status="succeeded")
        display.finished(Outcome(item=a, status="converted", pages=4))
        display.progressed(b, done=1, total=1, status="succeeded")
        display.finished(Outcome(item=b, status="failed", reason="the PDF is damaged"))
        display.started(c)
        display.progressed(c, done=2, total=2, status="succeeded")
        display.finished(Outcome(item=c, status="converted", pages=2))
        display.live.refresh()

    shown = re.sub(r"\x1b\[[0-9;?]*[a-zA-Z]", "", screen.getvalue())  # without colours
    assert "files 3/3" in shown and "7/7 pages" in shown
    assert f"failed {b.label}: the PDF is damaged" in shown


def test_the_client_imports_no_part_of_the_service():
    service = ("django", "rest_framework", "celery", "webapp", "ocr_worker", "model")
    code = (
        "import json, sys, folio_client, folio_client.cli; "
        f"print(json.dumps(sorted(m for m in sys.modules if m.split('.')[0] in {service!r})))"
    )

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert json.loads(done.stdout) == []


@pytest.mark.slow
def test_convert_writes_blocks_chunks_and_a_searchable_pdf_beside_the_input(
    folio, worker, tmp_path
):
    import pymupdf

    root = tmp_path / "in"
    put(root, "scan.pdf", documents.scanned_pdf())
    put(root, "report.pdf", documents.born_digital_pdf())
    for fmt in ("blocks", "chunks", "pdf"):
        code, stdout, _ = folio("convert", str(root), "--format", fmt, "--json")
        assert code == 0 and json.loads(stdout)["converted"] == 2, stdout
    blocks = json.loads((root / "scan.blocks.json").read_text())
    assert blocks["pages"][0]["source"] == "ocr" and blocks["pages"][0]["blocks"]
    chunks = json.loads((root / "report.chunks.json").read_text())
    assert {page for chunk in chunks["chunks"] for page in chunk["pages"]} == {1, 2, 3}
    searchable = pymupdf.open(root / "scan.searchable.pdf")
    assert "Marlow" in searchable[0].get_text()
    # The searchable PDFs are outputs, not inputs: a new run over the folder skips them.
    code, stdout, _ = folio("convert", str(root), "--json")
    assert code == 0 and json.loads(stdout)["converted"] == 2
    assert not (root / "scan.searchable.md").exists()


@pytest.mark.slow
def test_convert_asks_for_speaker_notes_and_comments_only_when_told(folio, worker, tmp_path):
    from tests import office
    from webapp.jobs.models import Job

    if not office.CORPUS.is_dir():
        pytest.skip(office.CORPUS_MISSING)
    root = tmp_path / "in"
    put(root, "deck.pptx", office.corpus("pptx/sources/powerpoint_sample.pptx"))
    put(root, "commented.docx", office.corpus("docx/sources/docx_comments.docx"))

    code, stdout, _ = folio("convert", str(root), "-o", str(tmp_path / "plain"), "--json")
    assert code == 0, stdout
    code, stdout, _ = folio(
        "convert", str(root), "-o", str(tmp_path / "noted"), "--speaker-notes", "--comments",
        "--json",
    )  # fmt: skip
    assert code == 0, stdout

    plain, noted = outputs(tmp_path / "plain"), outputs(tmp_path / "noted")
    assert "Speaker notes" not in plain["deck.md"].read_text()
    assert "*Speaker notes:* Some notes on the second slide." in noted["deck.md"].read_text()
    assert "John Reviewer" not in plain["commented.md"].read_text()
    assert "[author: John Reviewer (JR)" in noted["commented.md"].read_text()
    asked = {(job.options.get("speaker_notes"), job.options.get("comments")) for job in
             Job.objects.all()}  # fmt: skip
    assert asked == {(None, None), (True, True)}
