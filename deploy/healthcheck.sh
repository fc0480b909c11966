#!/bin/sh
# The images' HEALTHCHECK: asks the process that deploy/entrypoint.sh started whether it
# serves. web: GET /readyz/web (its database and broker answer); worker and beat: a Celery
# ping to its own node name (a worker busy on pages still answers: its main process does).
# One-off roles are always healthy.
set -eu
var_dir="${FOLIO_VAR_DIR:-/app/var}"
[ -r "$var_dir/run/role" ] || exit 0
read -r role target < "$var_dir/run/role"
case "$role" in
web)
    port="${target##*:}"
    exec python3 -c "import sys, urllib.request
with urllib.request.urlopen('http://127.0.0.1:$port/readyz/web', timeout=10) as r:
    sys.exit(0 if r.status == 200 else 1)"
    ;;
worker | beat)
    exec celery -A ocr_worker inspect ping --destination "$target" --timeout 5
    ;;
esac
