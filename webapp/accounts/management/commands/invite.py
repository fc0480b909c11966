from __future__ import annotations

from django.conf import settings
from django.core.management.base import BaseCommand

from webapp.accounts.invites import invite_make


class Command(BaseCommand):
    help = (
        "Print a sign-up link for USERNAME (sign-up mode `invite`); it makes that one account "
        "and expires after FOLIO_INVITE_DAYS days."
    )

    def add_arguments(self, parser):
        parser.add_argument("username")

    def handle(self, *args, username: str, **options):
        token = invite_make(username=username)
        self.stdout.write(f"{settings.FOLIO_PUBLIC_URL}/account/signup/?invite={token}")
        if settings.FOLIO_PUBLIC_URL_ORIGIN != "FOLIO_PUBLIC_URL":
            # On stderr: the link alone stays on stdout, for scripts.
            self.stderr.write(
                f"(the link's address is {settings.FOLIO_PUBLIC_URL_ORIGIN}; set "
                "FOLIO_PUBLIC_URL to the address people reach this server at)"
            )
