from django.apps import AppConfig


class JobsConfig(AppConfig):
    name = "webapp.jobs"
    label = "jobs"

    def ready(self) -> None:
        from webapp.jobs import checks, metrics  # noqa: F401  (registers the system checks)

        metrics.register()
