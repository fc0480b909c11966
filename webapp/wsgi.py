"""The web process's entry point (gunicorn webapp.wsgi)."""

import os

from django.core.wsgi import get_wsgi_application

from model.runtimes import layout_runtimes_off

# Before Django loads anything that imports PyMuPDF: the web process reads no page, so the
# layout model PyMuPDF would load at import stays out (model/runtimes.py).
layout_runtimes_off()

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "webapp.settings")
application = get_wsgi_application()
