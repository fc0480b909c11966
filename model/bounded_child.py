"""Work that MuPDF may take without bound, done in a child process with a wall-clock limit.

A hostile document can keep MuPDF busy for minutes in C code, where neither Python's signals
nor Celery's soft time limit reach it (a 2.5 KB PDF whose drawing draws itself ten times,
eight levels deep). So such work runs in a child process that is killed past its limit,
whatever it is doing: drawing a page's images (``model.page_images``) and building a
searchable PDF (``model.layout.searchable_pdf.searchable_pdf_bounded``).

The child is forked from a server process that has PyMuPDF and Pillow imported already
(multiprocessing's ``forkserver``, started once per worker process): a fresh interpreter per
page cost 1.5-1.9 s on the busy test host, the server's child 0.3-0.6 s more than drawing
in-process (bench/page_images.py). The server is a clean process of its own, so forking from
it is safe whatever threads the worker runs (a threads pool, vLLM).
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.context
import multiprocessing.process
import os
import resource
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import cache
from pathlib import Path
from typing import Any

# The child's exit status when the document itself says why the work cannot be done.
DOCUMENT_REFUSED = 3


class ChildTimeout(Exception):
    """The work was not done within the limit; the child was killed."""


class ChildFailed(Exception):
    """The child could not do the work: the document's own error, or the child died
    (``crashed``: killed by a signal or out of memory)."""

    def __init__(self, message: str, *, crashed: bool):
        super().__init__(message)
        self.crashed = crashed


@contextmanager
def bounded_run(
    work: Callable[..., None], args: tuple[Any, ...], *, timeout: float, memory_bytes: int
) -> Iterator[Path]:
    """Run ``work(folder, *args)`` in a child process killed after ``timeout`` s, with its
    address space capped at ``memory_bytes``; yields the folder it wrote its results into
    (deleted afterwards). ``work`` must be a module-level function (it is pickled)."""
    with tempfile.TemporaryDirectory(prefix="folio-child-") as folder:
        child = _context().Process(
            target=_child_main, args=(work, memory_bytes, folder, *args), daemon=True
        )
        child._config["authkey"] = _fresh_key()  # type: ignore[attr-defined]
        with _children_allowed():
            child.start()
        timed_out = False
        try:
            child.join(timeout)
        finally:
            if child.exitcode is None:  # past the limit, or the wait itself was interrupted
                timed_out = True
                child.kill()
                child.join()
        out = Path(folder)
        if timed_out:
            raise ChildTimeout(f"not done within {timeout:g} s")
        if child.exitcode == DOCUMENT_REFUSED and (out / "refused.txt").exists():
            raise ChildFailed((out / "refused.txt").read_text(), crashed=False)
        if child.exitcode is not None and child.exitcode < 0:
            raise ChildFailed(f"the child was killed by signal {-child.exitcode}", crashed=True)
        if child.exitcode != 0:
            error = out / "error.txt"
            message = error.read_text() if error.exists() else f"exit status {child.exitcode}"
            raise ChildFailed(f"the child failed: {message}", crashed=True)
        yield out


def _child_main(work: Callable[..., None], memory_bytes: int, folder: str, *args: Any) -> None:
    """The child: do the work into ``folder``; its exit status says how it went."""
    out = Path(folder)
    resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    from model.documents import DocumentError
    from model.pages import PageSelectionError

    try:
        work(folder, *args)
    except (DocumentError, PageSelectionError) as exc:
        (out / "refused.txt").write_text(str(exc))
        sys.exit(DOCUMENT_REFUSED)
    except MemoryError:
        (out / "error.txt").write_text("MemoryError: the work needs more memory")
        sys.exit(1)


@contextmanager
def _children_allowed() -> Iterator[None]:
    """Let a Celery prefork child start our child. It is a daemonic process, and
    multiprocessing refuses a daemonic process children, lest they outlive it; ours cannot:
    each is waited for and killed past its limit, and the fork server exits with the process
    that started it. Only one task runs at a time in a prefork child, so nothing else sees
    the settings changed meanwhile (a threads pool's process is not daemonic: no change)."""
    config = multiprocessing.current_process()._config  # type: ignore[attr-defined]
    daemon = config.pop("daemon", None)
    # The start sends this process's key along; a prefork child's is billiard's, which the
    # standard library's pickler refuses. A key of the standard library's, for the start.
    authkey = config.get("authkey")
    config["authkey"] = _fresh_key()
    try:
        yield
    finally:
        config["authkey"] = authkey
        if daemon is not None:
            config["daemon"] = daemon


def _fresh_key() -> bytes:
    """A process key of the standard library's own kind (see ``_children_allowed``)."""
    return multiprocessing.process.AuthenticationString(os.urandom(32))  # type: ignore[attr-defined,no-any-return]


@cache
def _context() -> multiprocessing.context.ForkServerContext:
    context = multiprocessing.get_context("forkserver")
    # Imported once in the server, so each child starts with them (model/render_child.py).
    context.set_forkserver_preload(["model.render_child"])
    return context
