"""Replay what jina-ai/reader's own end-to-end tests expect of its endpoint, with a PDF in
place of their HTML fixture, against a running Folio, and print each request with the answer.

Method: `python -m webapp.embedded` (bench.throughput's embedded_service: gunicorn, one Celery
worker with the `local` engine, embedded SQLite and Redis) on a free loopback port. Each
request below is one of Reader's e2e expectations (tests/e2e/*.test.ts in jina-ai/reader:
request-options, crawler-options-misc, cache-control, token-budget, respond-with) or one of
the behaviours its source defines (src/dto/crawler-options.ts: header parsing and the timeout
clamp; src/api/crawler.ts: `url` beside a `pdf`, the event stream), sent over HTTP as a Reader
client would. Nothing is asserted here (tests/test_reader_dropin.py does that); the script
prints one line per request: what was sent, the status, and the fields that matter.

    python bench/reader_replay.py [--json]
"""

from __future__ import annotations

import argparse
import base64
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx  # noqa: E402

from bench.throughput import embedded_service  # noqa: E402
from tests import documents  # noqa: E402

SOURCE_URL = "https://example.com/report.pdf"

# Headers Reader accepts that mean nothing for a document: accepted and ignored.
READER_ONLY_HEADERS = {
    "X-Locale": "ja-JP",
    "X-Engine": "browser",
    "X-Retain-Images": "none",
    "X-With-Links-Summary": "true",
    "X-Md-Heading-Style": "setext",
    "DNT": "1",
    "X-Set-Cookie": "session=abc123; Path=/; Domain=example.com",
    "X-Proxy-Url": "socks5://proxy.example.com:1080",
    "X-User-Agent": "CustomBot/1.0",
    "X-Referer": "https://google.com",
    "X-Base": "final",
    "X-Remove-Overlay": "true",
    "X-Respond-Timing": "mutation-idle",
    "X-With-Generated-Alt": "true",
    "X-Keep-Img-Data-Url": "true",
    "X-Robots-Txt": "Googlebot",
}
# Body parameters of Reader's e2e tests that mean nothing for a document.
READER_ONLY_BODY = {
    "userAgent": "CustomBot/1.0",
    "locale": "en-US",
    "referer": "https://google.com",
    "setCookies": ["session=abc123; Path=/; Domain=example.com"],
    "proxyUrl": "http://proxy.example.com:8080",
    "proxy": "us",
    "customHeader": {"X-Custom-Test": "hello"},
    "robotsTxt": "Googlebot",
    "base": "final",
    "respondTiming": "visible-content",
    "keepImgDataUrl": True,
    "engine": "auto",
    "removeOverlay": True,
    "withGeneratedAlt": True,
    "retainImages": "none",
    "withLinksSummary": True,
    "markdown": {"headingStyle": "atx", "bulletListMarker": "-"},
}


def summary(response: httpx.Response) -> str:
    kind = response.headers.get("content-type", "")
    if "event-stream" in kind:
        frames = []
        for block in response.text.strip().split("\n\n"):
            lines = dict(line.split(": ", 1) for line in block.splitlines() if ": " in line)
            data = json.loads(lines.get("data", "{}"))
            frames.append(f"{lines.get('event')}(page={data.get('page', '-')})")
        return "frames: " + " ".join(frames)
    if "json" in kind:
        body = response.json()
        if "error" in body and isinstance(body["error"], dict):  # OpenAI's shape
            return f"error: {body['error'].get('message', '')[:160]}"
        if "status" in body and "engine" in body:  # a job, as the jobs API shows it
            return f"job {body['status']}, engine={body['engine']}, pages={body['progress']}"
        data = body.get("data")
        if body.get("name") or data is None:
            return f"{body.get('name')} {body.get('status')}: {str(body.get('message'))[:160]}"
        if isinstance(data, dict) and "jobId" in data:
            return f"jobId, poll={data.get('poll')}"
        if isinstance(data, dict):
            fields = {
                "title": data.get("title"),
                "url": data.get("url"),
                "has content": "content" in data,
                "has text": "text" in data,
            }
            if "text" in data:
                fields["markup in text"] = any(c in data["text"] for c in "#|<")
            return ", ".join(f"{k}={v!r}" for k, v in fields.items())
        return str(data)[:160]
    if kind.startswith("text/"):
        return "text: " + response.text[:120].replace("\n", "⏎")
    return kind


def replay(base_url: str, key: str) -> list[dict]:
    auth = {"Authorization": f"Bearer {key}"}
    pdf = documents.born_digital_pdf()
    pdf64 = base64.b64encode(pdf).decode()
    web = httpx.Client(base_url=base_url, timeout=200)
    results = []

    def post(what: str, body: dict, headers: dict | None = None, *, anonymous=False, **kwargs):
        headers = {"Accept": "application/json", **(headers or {})}
        if not anonymous:
            headers.update(auth)
        if "files" in kwargs:
            response = web.post("/", headers=headers, **kwargs)
        else:
            response = web.post("/", headers=headers, json=body)
        shown_body = {k: ("<base64>" if k == "pdf" else v) for k, v in body.items()}
        record(what, f"POST / {json.dumps(shown_body)} {sanitized(headers)}", response)
        return response

    def record(what: str, request: str, response: httpx.Response) -> None:
        results.append(
            {"what": what, "request": request, "status": response.status_code,
             "answer": summary(response)}
        )  # fmt: skip

    document = {"pdf": pdf64, "url": SOURCE_URL}
    # token-budget.test.ts
    post("tokenBudget large (body)", {**document, "tokenBudget": 100000, "respondWith": "markdown"})
    post("tokenBudget 1 (body)", {**document, "tokenBudget": 1, "respondWith": "markdown"})
    post("X-Token-Budget: 1", {**document, "respondWith": "markdown"}, {"X-Token-Budget": "1"})
    # cache-control.test.ts, crawler-options-misc.test.ts
    post("noCache true (body)", {**document, "noCache": True})
    post("cacheTolerance 0 (body)", {**document, "cacheTolerance": 0})
    post("cacheTolerance 3600 (body)", {**document, "cacheTolerance": 3600})
    post("timeout 30 (body)", {**document, "timeout": 30})
    post("X-Timeout: 999 (clamped)", document, {"X-Timeout": "999"})
    # request-options.test.ts and friends: one request per Reader-only header and body key
    for name, value in READER_ONLY_HEADERS.items():
        post(f"{name} (ignored)", document, {name: value})
    for name, value in READER_ONLY_BODY.items():
        post(f"{name} (body, ignored)", {**document, name: value})
    # respond-with.test.ts
    post("respondWith text (body)", {**document, "respondWith": "text"})
    post("X-Respond-With: text", document, {"X-Respond-With": "text"})
    # url beside pdf; a file's name; the title
    post("url + pdf, text/plain", document, {"Accept": "text/plain"})
    post(
        "file part without url",
        {"file": "report.pdf"},
        files={"file": ("report.pdf", pdf, "application/pdf")},
    )
    titled = base64.b64encode(documents.titled_pdf("Harbour Annual")).decode()
    post("title from metadata", {"pdf": titled})
    # the event stream
    post("text/event-stream", document, {"Accept": "text/event-stream"})
    # anonymous async: the 202's poll link, fetched by the same anonymous caller
    accepted = post(
        "anonymous Prefer: respond-async",
        {"pdf": pdf64},
        {"Prefer": "respond-async"},
        anonymous=True,
    )
    poll = accepted.json().get("data", {}).get("poll") if accepted.status_code == 202 else None
    if poll:
        record("anonymous poll link", f"GET {poll.replace(base_url, '')}", web.get(poll))
    # queue honesty: an engine no worker serves, the README's first example on one page
    jobs = web.post(
        "/v1/jobs", headers=auth, files={"file": ("p.pdf", pdf)}, data={"engine": "jina-ocr-v1"}
    )
    record("jobs API engine=jina-ocr-v1 (no worker)", "POST /v1/jobs engine=jina-ocr-v1", jobs)
    chat = web.post(
        "/v1/chat/completions",
        headers=auth,
        json={
            "model": "jina-ocr-v1",
            "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {
                "url": "data:application/pdf;base64," + pdf64}}]}],
        },
    )  # fmt: skip
    record("chat model=jina-ocr-v1 (no worker)", "POST /v1/chat/completions", chat)
    readme = web.post(
        "/v1/jobs",
        headers=auth,
        files={"file": ("paper.pdf", documents.one_page_pdf())},
        data={"pages": "1-3"},
    )
    record("README first example, 1-page PDF", "POST /v1/jobs pages=1-3", readme)
    return results


def sanitized(headers: dict) -> str:
    shown = {k: ("Bearer …" if k == "Authorization" else v) for k, v in headers.items()}
    plain = {"Accept": "application/json"}
    return " ".join(f"{k}: {v}" for k, v in shown.items() if plain.get(k) != v)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true", help="print JSON lines")
    args = parser.parse_args()
    # A loaded machine may take minutes to migrate and start the worker.
    with embedded_service(1, external=False) as (base_url, key, _):
        results = replay(base_url, key)
    for result in results:
        if args.json:
            print(json.dumps(result))
        else:
            print(f"{result['what']}: {result['status']} {result['answer']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
