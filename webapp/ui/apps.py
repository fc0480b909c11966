from __future__ import annotations

from django.apps import AppConfig


class UiConfig(AppConfig):
    name = "webapp.ui"
    label = "ui"
    verbose_name = "Browser interface"
