"""How long a submission holds its request: a 2,000-page PDF and a 10-page one through
``job_submit`` (what POST /v1/jobs, the Reader and the UI call, from the document's bytes to
the job written and its first messages sent), with the page messages sent as the service does
now (the first ``SEND_IN_REQUEST`` in the request, the rest from a thread in batches) and as
it did before (every message in the request, one broker round trip each).

Method: the two ways alternate, ``--rounds`` times each, in one run, against the database of
``DATABASE_URL`` (migrated) and the broker of ``FOLIO_BROKER_URL``; no worker needs to run
(the engine's "is it served" check is skipped, and the messages are purged afterwards). The
figure is the median wall time of each, and their ratio.

    DATABASE_URL=... FOLIO_BROKER_URL=... FOLIO_SECRET_KEY=... python bench/submission.py
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()

    import django

    django.setup()
    from django.contrib.auth.models import User

    from tests import hostile
    from tests.workers import purge_queues
    from webapp.jobs.models import Job
    from webapp.jobs.services import job_submit, sending, submission

    submission._engine_served_check = lambda engine: None  # no worker needed here
    owner, _ = User.objects.get_or_create(username="bench-submission")
    documents = {pages: hostile.many_pages_pdf(pages) for pages in (10, 2000)}
    ways = {"batched (now)": sending.SEND_IN_REQUEST, "one by one (before)": 10**9}
    seconds: dict[tuple[str, int], list[float]] = {}
    for _ in range(args.rounds):
        for pages, data in documents.items():
            for way, inline in ways.items():
                sending.SEND_IN_REQUEST = inline
                started = time.perf_counter()
                job = job_submit(owner=owner, data=data, filename=f"{pages}.pdf")
                seconds.setdefault((way, pages), []).append(time.perf_counter() - started)
                time.sleep(2 if pages > 100 else 0)  # let the background sends finish
                Job.objects.filter(pk=job.pk).delete()
    purge_queues("ocr.local")
    print(f"{'pages':>6} {'way':<22} {'median s':>9}")
    for (way, pages), times in sorted(seconds.items(), key=lambda item: item[0][1]):
        print(f"{pages:>6} {way:<22} {statistics.median(times):>9.2f}")
    for pages in documents:
        before = statistics.median(seconds[("one by one (before)", pages)])
        now = statistics.median(seconds[("batched (now)", pages)])
        print(f"{pages} pages: the request is held {before / now:.1f}x shorter")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
