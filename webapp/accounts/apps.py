from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "webapp.accounts"
    label = "accounts"

    def ready(self):
        from webapp.accounts import login_throttle  # noqa: F401  (connects its signal receivers)
