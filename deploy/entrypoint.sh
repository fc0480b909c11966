#!/bin/sh
# The entry point of Folio's images, and of every process of a deployment without them:
#
#   entrypoint.sh web       gunicorn on $FOLIO_BIND (0.0.0.0:8000)
#   entrypoint.sh worker    a Celery worker on $FOLIO_WORKER_QUEUES (ocr.local); more
#                           arguments go to celery (e.g. -P threads -c 32)
#   entrypoint.sh beat      the scheduler, with a worker for the maintenance queue (`folio`):
#                           exactly one per deployment
#   entrypoint.sh migrate   database migrations, the bucket (FOLIO_S3_CREATE_BUCKET=1) and the
#                           admin from FOLIO_ADMIN_USERNAME; then it exits
#   entrypoint.sh CMD ...   anything else runs as given (python3 manage.py createapikey you)
#
# Every role first runs `python3 -m webapp.preflight`: a wrong setting stops it here, naming the
# variable, and it waits up to $FOLIO_START_WAIT_SECONDS (60) for the database, the broker and
# the storage. The worker's node name is $FOLIO_WORKER_NAME@$FOLIO_HOSTNAME (the host name by
# default): pages record it, and the reaper uses it to find the pages of a host that is gone.
set -eu

role="${1:-web}"
[ $# -gt 0 ] && shift
host="${FOLIO_HOSTNAME:-${HOSTNAME:-$(cat /proc/sys/kernel/hostname)}}"
var_dir="${FOLIO_VAR_DIR:-/app/var}"
wait_seconds="${FOLIO_START_WAIT_SECONDS:-60}"
log_level="${FOLIO_LOG_LEVEL:-INFO}"

preflight() {
    python3 -m webapp.preflight --wait "$wait_seconds" "$@"
}

# What deploy/healthcheck.sh probes: this process's role and, for workers, its node name.
remember() {
    mkdir -p "$var_dir/run"
    printf '%s %s\n' "$1" "${2:-}" > "$var_dir/run/role"
}

case "$role" in
web)
    preflight
    remember web "${FOLIO_BIND:-0.0.0.0:8000}"
    exec gunicorn webapp.wsgi --bind "${FOLIO_BIND:-0.0.0.0:8000}" \
        --workers "${FOLIO_WEB_WORKERS:-4}" --threads "${FOLIO_WEB_THREADS:-4}" \
        --timeout "${FOLIO_WEB_TIMEOUT:-60}" --keep-alive "${FOLIO_WEB_KEEPALIVE:-75}" \
        --access-logfile - "$@"
    ;;
worker)
    preflight
    node="${FOLIO_WORKER_NAME:-worker}@$host"
    remember worker "$node"
    set -- -Q "${FOLIO_WORKER_QUEUES:-ocr.local}" -n "$node" "$@"
    if [ -n "${FOLIO_WORKER_CONCURRENCY:-}" ]; then
        set -- --concurrency "$FOLIO_WORKER_CONCURRENCY" "$@"
    fi
    exec celery -A ocr_worker worker --loglevel "$log_level" "$@"
    ;;
beat)
    preflight
    node="beat@$host"
    remember beat "$node"
    exec celery -A ocr_worker worker --beat -Q folio --concurrency 1 -n "$node" \
        --schedule "$var_dir/celerybeat-schedule" --loglevel "$log_level" "$@"
    ;;
migrate)
    if [ "${FOLIO_S3_CREATE_BUCKET:-0}" = 1 ]; then
        preflight --create-bucket
    else
        preflight
    fi
    python3 manage.py migrate --no-input
    if [ -n "${FOLIO_ADMIN_USERNAME:-}" ]; then
        python3 manage.py ensureadmin
    fi
    ;;
*)
    exec "$role" "$@"
    ;;
esac
