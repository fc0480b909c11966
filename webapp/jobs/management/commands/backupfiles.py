from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand

from webapp.jobs.backup import export_files


class Command(BaseCommand):
    help = (
        "Copy every stored file the database refers to into FOLDER, with a manifest of their "
        "SHA-256 (the files half of deploy/backup.sh)."
    )

    def add_arguments(self, parser):
        parser.add_argument("folder", type=Path)

    def handle(self, *args, folder: Path, **options):
        folder.mkdir(parents=True, exist_ok=True)
        count = export_files(folder)
        self.stderr.write(f"backed up {count} stored files into {folder}")
