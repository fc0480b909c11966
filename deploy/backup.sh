#!/bin/sh
# A backup of a Folio deployment into FOLDER: the PostgreSQL database (pg_dump's custom
# format) and every stored file it refers to (uploads, page images, figures: manage.py
# backupfiles), read through the same settings as any Folio process (DATABASE_URL or
# DATABASE_URL_FILE, the FOLIO_S3_* or FOLIO_MEDIA_ROOT storage settings).
#
#   deploy/backup.sh FOLDER        # from the repository root or the image's /app
#
# The database first, then the files: every file the dump refers to is then in the backup
# (a job that expires in between loses its files in the backup, as it does in the service).
# Needs pg_dump of the server's major version or newer on PATH. docs/DEPLOY.md, "Backups".
set -eu
[ $# -eq 1 ] || { echo "usage: $0 FOLDER" >&2; exit 64; }
folder="$1"
url="${DATABASE_URL:-}"
[ -n "$url" ] || url="$(cat "${DATABASE_URL_FILE:?DATABASE_URL or DATABASE_URL_FILE must be set}")"
mkdir -p "$folder"
pg_dump --format=custom --no-owner --no-privileges --dbname="$url" --file="$folder/folio.dump"
python3 manage.py backupfiles "$folder/files"
echo "backup of the database and its files in $folder" >&2
