from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from model.config import env_str
from webapp.accounts.services import user_ensure_admin


class Command(BaseCommand):
    help = (
        "Create (or update) an admin user from FOLIO_ADMIN_USERNAME and FOLIO_ADMIN_PASSWORD "
        "(or FOLIO_ADMIN_PASSWORD_FILE); safe to run at every start. Does nothing if unset."
    )

    def add_arguments(self, parser):
        parser.add_argument("--username", help="instead of FOLIO_ADMIN_USERNAME")
        parser.add_argument("--email", default="")

    def handle(self, *args, username: str | None, email: str, **options):
        username = username or env_str("FOLIO_ADMIN_USERNAME")
        password = env_str("FOLIO_ADMIN_PASSWORD")
        if not username:
            self.stderr.write("FOLIO_ADMIN_USERNAME is not set; no admin created.")
            return
        if not password:
            raise CommandError(
                "FOLIO_ADMIN_PASSWORD (or FOLIO_ADMIN_PASSWORD_FILE) must be set to create "
                f"the admin {username!r}"
            )
        _, created = user_ensure_admin(username=username, password=password, email=email)
        self.stderr.write(f"{'Created' if created else 'Updated'} admin {username!r}.")
