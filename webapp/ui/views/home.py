"""``/``: the Reader API for programs, the home page for browsers."""

from __future__ import annotations

from django.conf import settings
from django.shortcuts import redirect, render
from django.views.decorators.csrf import csrf_exempt

from webapp.reader.views import ReaderView

_reader = ReaderView.as_view()


@csrf_exempt
def home_or_reader(request, *args, **kwargs):
    """``/`` is the Reader API for programs and the home page for browsers (they ask for
    HTML); everything but a browser's GET goes to the Reader unchanged."""
    if request.method in ("GET", "HEAD") and "text/html" in request.headers.get("Accept", ""):
        return home(request)
    return _reader(request, *args, **kwargs)


# The schema generator finds the Reader's API view through these, as on its own route.
home_or_reader.cls = ReaderView  # type: ignore[attr-defined]
home_or_reader.initkwargs = _reader.initkwargs  # type: ignore[attr-defined]


def home(request):
    if not request.user.is_authenticated:
        return render(request, "home.html", {"signup_enabled": settings.FOLIO_SIGNUP == "open"})
    return redirect("ui-upload")
