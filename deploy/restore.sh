#!/bin/sh
# A backup made by deploy/backup.sh put into an empty deployment: the database into the empty
# database of DATABASE_URL (or DATABASE_URL_FILE), then the stored files into its storage
# (the bucket is created if it is missing). Start the services afterwards; the `migrate`
# role then brings the schema to the image's version as usual.
#
#   deploy/restore.sh FOLDER
set -eu
[ $# -eq 1 ] || { echo "usage: $0 FOLDER" >&2; exit 64; }
folder="$1"
[ -r "$folder/folio.dump" ] || { echo "$folder/folio.dump is missing: not a backup" >&2; exit 66; }
url="${DATABASE_URL:-}"
[ -n "$url" ] || url="$(cat "${DATABASE_URL_FILE:?DATABASE_URL or DATABASE_URL_FILE must be set}")"
pg_restore --no-owner --no-privileges --exit-on-error --dbname="$url" "$folder/folio.dump"
python3 manage.py restorefiles "$folder/files"
echo "restored the database and its files from $folder" >&2
