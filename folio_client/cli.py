"""``folio``: the command-line client.

    folio convert PATH... [-o OUT] [--pages 1-3,7] [--engine NAME]
                          [--format md|json|blocks|chunks|pdf] [--concurrency N]
                          [--speaker-notes] [--comments] [--ocr-language CODES]
                          [--force] [--quiet] [--json]
    folio jobs list|show|wait|cancel
    folio engines
    folio health

Global options (``--url``, ``--api-key``, ``-v``) stand before or after the command; each
setting comes from the option, else the environment, else the configuration file
(``PRECEDENCE``).

Exit status: 0 when everything asked for succeeded, 1 when anything failed (a file, a job,
the server), 2 for a usage or configuration error (a missing API key, or one the server
refuses, included), 130 when interrupted.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.logging import RichHandler
from rich.markup import escape

from folio_client import render
from folio_client.aio import AsyncClient
from folio_client.client import Client
from folio_client.config import Settings, resolve
from folio_client.convert import ConvertOptions, Display, Run, convert_all
from folio_client.errors import AuthenticationError, ConfigError, FolioError, WaitTimeout
from folio_client.plan import PlanError, plan
from folio_client.progress import LineDisplay, LiveDisplay, QuietDisplay

logger = logging.getLogger(__name__)

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


# Where each setting comes from, first match wins; said in --help and in the README.
PRECEDENCE = (
    "Global options (--url, --api-key, -v) may stand before or after the command; given "
    "twice, the later one counts. Each setting comes from the first of: the option, the "
    "environment (FOLIO_URL, FOLIO_API_KEY), the configuration file ($FOLIO_CONFIG, else "
    "~/.config/folio/config.toml, with `url` and `api_key`); the URL falls back to "
    "http://127.0.0.1:8000."
)


def _add_global_options(parser: argparse.ArgumentParser) -> None:
    """The options every command takes, added to the main parser and to each command's own.

    Each parser gets actions of its own (argparse's ``parents`` shares one action object
    between parsers, so a default set on one reset what another had parsed), and every
    default is SUPPRESS: a parser that does not see an option leaves alone what the parser
    before it stored, so ``folio --url X health`` and ``folio health --url X`` agree."""
    group = parser.add_argument_group("global options")
    group.add_argument(
        "--url",
        default=argparse.SUPPRESS,
        help="the server (else $FOLIO_URL, else the configuration file's `url`)",
    )
    group.add_argument(
        "--api-key",
        default=argparse.SUPPRESS,
        help="API key (else $FOLIO_API_KEY, else the configuration file's `api_key`)",
    )
    group.add_argument(
        "-v",
        "--verbose",
        action="store_true",
        default=argparse.SUPPRESS,
        help="log retries and waits",
    )


def _command(commands: Any, name: str, **kwargs: Any) -> argparse.ArgumentParser:
    parser: argparse.ArgumentParser = commands.add_parser(name, epilog=PRECEDENCE, **kwargs)
    _add_global_options(parser)
    return parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="folio",
        description="Folio document OCR from the command line.",
        epilog=PRECEDENCE,
    )
    _add_global_options(parser)
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    convert = _command(commands, "convert", help="convert files and folders to Markdown")
    convert.add_argument("paths", nargs="+", type=Path, metavar="PATH")
    convert.add_argument("-o", "--out", type=Path, help="write under OUT, mirroring the tree")
    convert.add_argument("--pages", help="pages of every file, e.g. 1-3,7 (default: all)")
    convert.add_argument(
        "--engine",
        help="engine name (see `folio engines`), or auto: local first, a VLM engine for the "
        "pages it reads badly",
    )
    convert.add_argument(
        "--format",
        choices=["md", "json", "blocks", "chunks", "pdf"],
        default="md",
        dest="fmt",
        help="md (joined Markdown), json (per page), blocks (layout blocks with boxes), "
        "chunks (for retrieval, with provenance), pdf (searchable PDF: NAME.searchable.pdf)",
    )
    convert.add_argument("--concurrency", type=_positive, default=4, help="files in flight")
    convert.add_argument(
        "--speaker-notes",
        action="store_true",
        help="add presentations' speaker notes after each slide (PPTX, PPT, ODP)",
    )
    convert.add_argument(
        "--comments",
        action="store_true",
        help="add reviewers' comments after what they belong with (DOCX, PPTX, XLSX, OpenDocument)",
    )
    convert.add_argument(
        "--ocr-language",
        metavar="CODES",
        help="scans' language in Tesseract's codes (kor, fas+ara) for what the bundled OCR "
        "cannot read; found on each page when left out",
    )
    convert.add_argument("--force", action="store_true", help="convert files already done")
    convert.add_argument("-q", "--quiet", action="store_true", help="no progress display")
    convert.add_argument("--json", action="store_true", help="a JSON summary on stdout")

    jobs = _command(commands, "jobs", help="list, show, wait for, cancel jobs")
    actions = jobs.add_subparsers(dest="action", required=True, metavar="ACTION")
    listing = _command(actions, "list", help="your jobs, newest first")
    listing.add_argument("--status", help="e.g. running or failed,partially_failed")
    listing.add_argument("--limit", type=_positive, default=20, help="at most 100")
    listing.add_argument("--page", type=_positive, default=1)
    listing.add_argument("--json", action="store_true")
    show = _command(actions, "show", help="one job with its pages")
    show.add_argument("job_id")
    show.add_argument("--json", action="store_true")
    wait = _command(actions, "wait", help="wait until jobs are final")
    wait.add_argument("job_ids", nargs="+", metavar="job_id")
    wait.add_argument("--timeout", type=float, help="seconds (default: no limit)")
    wait.add_argument("--json", action="store_true")
    cancel = _command(actions, "cancel", help="cancel jobs")
    cancel.add_argument("job_ids", nargs="+", metavar="job_id")
    cancel.add_argument("--json", action="store_true")

    engines = _command(commands, "engines", help="engines the server runs")
    engines.add_argument("--json", action="store_true")
    health = _command(commands, "health", help="is the server ready?")
    health.add_argument("--json", action="store_true")
    return parser


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    return number


def _setup_logging(console: Console, verbose: bool) -> None:
    """Log lines (retries, waits) go to stderr through rich, so they print above the live
    display instead of through it."""
    package = logging.getLogger("folio_client")
    for handler in list(package.handlers):
        if getattr(handler, "folio_cli", False):
            package.removeHandler(handler)
    handler = RichHandler(console=console, show_path=False, show_time=False)
    handler.folio_cli = True  # type: ignore[attr-defined]
    package.addHandler(handler)
    package.setLevel(logging.INFO if verbose else logging.WARNING)


# Commands that talk to the authenticated API (health asks the open probes only).
NEEDS_KEY = frozenset({"convert", "jobs", "engines"})
GLOBAL_DEFAULTS = {"url": None, "api_key": None, "verbose": False}


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    for name, default in GLOBAL_DEFAULTS.items():
        if not hasattr(args, name):  # given nowhere: every parser's default is SUPPRESS
            setattr(args, name, default)
    # Piped output is not cut to 80 columns: a job id in a table must survive `| grep`.
    out = Console(file=sys.stdout, soft_wrap=True, width=None if sys.stdout.isatty() else 200)
    err = Console(file=sys.stderr)
    _setup_logging(err, args.verbose)
    try:
        settings = resolve(args.url, args.api_key)
        if args.command in NEEDS_KEY and not settings.api_key:
            raise ConfigError(_missing_key(settings))
        args.url, args.api_key = settings.url, settings.api_key
        return COMMANDS[args.command](args, out, err)
    except ConfigError as exc:
        err.print(f"folio: {escape(str(exc))}", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    except AuthenticationError as exc:
        # A wrong key is a configuration error: every file would fail the same way.
        err.print(f"folio: {escape(_refused_key(settings, exc))}", highlight=False, soft_wrap=True)
        return EXIT_USAGE
    except FolioError as exc:
        err.print(f"folio: {escape(str(exc))}", highlight=False, soft_wrap=True)
        return EXIT_FAILED
    except KeyboardInterrupt:
        err.print("folio: interrupted")
        return EXIT_INTERRUPTED


def _key_origin(settings: Settings) -> str:
    source = settings.key_source
    return {"argument": "--api-key", "FOLIO_API_KEY": "$FOLIO_API_KEY"}.get(source, source)


def _missing_key(settings: Settings) -> str:
    return (
        f"no API key for {settings.url}: pass --api-key KEY, set FOLIO_API_KEY, or write "
        f'api_key = "KEY" in {settings.config_file}. The server\'s administrator makes one '
        "with `manage.py createapikey NAME`; a user, on the server's /account/keys/ page"
    )


def _refused_key(settings: Settings, exc: AuthenticationError) -> str:
    return (
        f"{settings.url} refused the API key from {_key_origin(settings)} "
        f"({exc.message.rstrip('.')}). Check the key (it is sent as `Authorization: Bearer "
        "KEY`), or make a new one on the server's /account/keys/ page"
    )


def cmd_convert(args: argparse.Namespace, out: Console, err: Console) -> int:
    try:
        items = plan(args.paths, out=args.out, fmt=args.fmt)
    except PlanError as exc:
        err.print(f"folio: {escape(str(exc))}", highlight=False)
        return EXIT_USAGE
    options = ConvertOptions(
        pages=args.pages,
        engine=args.engine,
        fmt=args.fmt,
        concurrency=args.concurrency,
        force=args.force,
        speaker_notes=args.speaker_notes,
        comments=args.comments,
        ocr_language=args.ocr_language,
    )
    run = Run(items=items, options=options)
    client = AsyncClient(args.url, args.api_key, max_connections=max(10, 2 * args.concurrency))

    async def go(display: Display) -> None:
        async with client:
            await convert_all(client, run, display)

    if args.quiet:
        asyncio.run(go(QuietDisplay()))
    elif err.is_terminal:
        with LiveDisplay(err, files=len(items)) as display:
            asyncio.run(go(display))
    else:
        asyncio.run(go(LineDisplay(err)))
    if args.json:
        render.print_json(out, render.summary_data(run))
    else:
        render.print_summary(out, run, quiet=args.quiet)
    failed = any(outcome.status == "failed" for outcome in run.outcomes)
    return EXIT_FAILED if failed else EXIT_OK


def cmd_jobs(args: argparse.Namespace, out: Console, err: Console) -> int:
    with Client(args.url, args.api_key) as client:
        if args.action == "list":
            listing = client.jobs(status=args.status, page=args.page, page_size=args.limit)
            if args.json:
                render.print_json(out, [job.raw for job in listing.results])
            else:
                render.print_jobs(out, listing)
            return EXIT_OK
        if args.action == "show":
            job = client.job(args.job_id, pages=True)
            if args.json:
                render.print_json(out, job.raw)
            else:
                render.print_job(out, job)
            return EXIT_OK
        if args.action == "wait":
            return _wait(client, args, out, err)
        jobs = [client.cancel(job_id) for job_id in args.job_ids]
        if args.json:
            render.print_json(out, [job.raw for job in jobs])
        else:
            for job in jobs:
                out.print(f"{job.id} {job.status}", highlight=False)
        return EXIT_OK


def _wait(client: Client, args: argparse.Namespace, out: Console, err: Console) -> int:
    finished = []
    code = EXIT_OK
    for job_id in args.job_ids:
        try:
            job = client.wait(job_id, timeout=args.timeout)
        except WaitTimeout as exc:
            err.print(f"folio: {escape(str(exc))}", highlight=False)
            job, code = exc.job, EXIT_FAILED
        if job.is_final and not job.succeeded:
            job = client.with_failed_pages(job)
        finished.append(job)
        if not job.succeeded:
            code = EXIT_FAILED
    if args.json:
        render.print_json(out, [job.raw for job in finished])
    else:
        for job in finished:
            reason = f": {job.failure_reason()}" if job.is_final and not job.succeeded else ""
            out.print(escape(f"{job.id} {job.status}{reason}"), highlight=False)
    return code


def cmd_engines(args: argparse.Namespace, out: Console, err: Console) -> int:
    with Client(args.url, args.api_key) as client:
        engines = client.engines()
    if args.json:
        render.print_json(out, [engine.id for engine in engines])
    else:
        render.print_engines(out, engines)
    return EXIT_OK


def cmd_health(args: argparse.Namespace, out: Console, err: Console) -> int:
    with Client(args.url, args.api_key) as client:
        health = client.health()
        url = client.base_url
    if args.json:
        render.print_json(out, render.health_data(health, url))
    else:
        render.print_health(out, health, url)
    return EXIT_OK if health.ready else EXIT_FAILED


COMMANDS = {"convert": cmd_convert, "jobs": cmd_jobs, "engines": cmd_engines, "health": cmd_health}


if __name__ == "__main__":
    sys.exit(main())
