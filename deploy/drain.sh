#!/bin/sh
# A stopping worker's first step (Kubernetes' preStop, before SIGTERM): it stops taking pages
# from its queues at once, so none is handed to a process about to leave; the pages it holds
# it then finishes in Celery's warm shutdown. Other roles have nothing to drain here (web's
# preStop is a pause while its endpoint leaves the Service: deploy/kubernetes/base/web.yaml).
set -eu
var_dir="${FOLIO_VAR_DIR:-/app/var}"
[ -r "$var_dir/run/role" ] || exit 0
read -r role target < "$var_dir/run/role"
[ "$role" = worker ] || exit 0
queues="${FOLIO_WORKER_QUEUES:-ocr.local}"
for queue in $(echo "$queues" | tr ',' ' '); do
    celery -A ocr_worker control cancel_consumer "$queue" --destination "$target" --timeout 10 || true
done
