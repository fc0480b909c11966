from __future__ import annotations

from django.core.management.base import BaseCommand

from webapp.accounts.services import api_key_create, user_get_or_create


class Command(BaseCommand):
    help = "Create an API key for USERNAME (creating the user if needed); the key is the last line."

    def add_arguments(self, parser):
        parser.add_argument("username")
        parser.add_argument("--name", default="", help="a label to tell this key apart")

    def handle(self, *args, username: str, name: str, **options):
        user, created = user_get_or_create(username=username)
        if created:
            self.stderr.write(f"Created user {username!r}.")
        issued = api_key_create(user=user, name=name or "created by createapikey")
        self.stderr.write("Store this key now: it is not shown again.")
        self.stdout.write(issued.secret)
