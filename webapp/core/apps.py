from django.apps import AppConfig


class CoreConfig(AppConfig):
    name = "webapp.core"
    label = "core"

    def ready(self) -> None:
        from webapp.core import schema  # noqa: F401  (registers the schema extensions)
