"""A real HTTP server on 127.0.0.1 that serves the generated documents, for URL ingestion."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from tests import documents, office

ROUTES = {
    "/report.pdf": ("application/pdf", documents.born_digital_pdf),
    "/page.png": ("image/png", documents.png_page),
    "/page.html": ("text/html; charset=utf-8", lambda: b"<html><body><h1>Hi</h1></body></html>"),
    # A news page in Windows-1252, with navigation, a footer and a script around the article.
    "/article.html": (
        "text/html; charset=windows-1252",
        lambda: office.ARTICLE_HTML.replace(
            b"market hall", "market hall caf\u00e9".encode("cp1252")
        ),
    ),
    # A PDF served with a lying type: the content decides, not the header.
    "/mislabelled": ("text/plain", documents.born_digital_pdf),
}


class _Handler(BaseHTTPRequestHandler):
    def do_GET(self):  # noqa: N802 (http.server's naming)
        parts = urlsplit(self.path)
        if parts.path == "/redirect":
            self.send_response(302)
            self.send_header("Location", parse_qs(parts.query)["to"][0])
            self.end_headers()
            return
        if parts.path not in ROUTES:
            self.send_error(404)
            return
        content_type, make = ROUTES[parts.path]
        body = make()
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):  # keep test output quiet
        pass


@contextmanager
def document_server() -> Iterator[str]:
    """Serves until the block ends; yields its base URL (http://127.0.0.1:PORT)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
