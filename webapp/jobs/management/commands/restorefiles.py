from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from webapp.core.storage import bucket_ensure
from webapp.jobs.backup import RestoreError, import_files


class Command(BaseCommand):
    help = (
        "Put the stored files of a backup (FOLDER, written by backupfiles) back into the "
        "storage under their names, creating the bucket if needed (deploy/restore.sh)."
    )

    def add_arguments(self, parser):
        parser.add_argument("folder", type=Path)

    def handle(self, *args, folder: Path, **options):
        if settings.FOLIO_STORAGE == "s3" and bucket_ensure():
            self.stderr.write("created the bucket")
        try:
            count = import_files(folder)
        except RestoreError as exc:
            raise CommandError(str(exc)) from exc
        self.stderr.write(f"restored {count} stored files from {folder}")
