# One image for the web process, the CPU workers, beat and the migrate step; the role is the
# command (deploy/entrypoint.sh). The GPU worker's image (Dockerfile.gpu) adds vLLM.
#
# It builds offline, on any build host, for linux/amd64 or linux/arm64: the dependencies come
# from deploy/requirements-<arch>.lock (every package pinned with its wheel's SHA-256, for this
# image's CPython 3.11.16 and glibc 2.36: deploy/platforms.py) and from the wheelhouse
# wheels/<arch>/, which `make wheels` fills once from any machine. `docker build --network=none
# --build-arg LIBREOFFICE=0 .` then needs nothing from outside (LibreOffice, below, comes from
# Debian's archive); `--build-arg OFFLINE=0` lets pip download what the wheelhouse lacks (still
# hash-checked). `docker buildx build --platform linux/amd64,linux/arm64 .` builds both.
#
# The base image by digest: python:3.11-slim-bookworm's index (every platform) as Docker's
# official-images record (docker-library/repo-info, repos/python/remote/3.11-slim-bookworm.md,
# PYTHON_VERSION=3.11.16). docs/DEPLOY.md, "Pinned images", says how to move it.
FROM python:3.11-slim-bookworm@sha256:0bee7276f83efd4a1ee05bbbf4281d95ed28e079220a9457f25a93e3f1e3c31b

ARG OFFLINE=1
# Set by BuildKit from --platform (amd64 or arm64): which lock and wheelhouse to install.
ARG TARGETARCH
# A fixed uid, so that files on volumes and secrets mounted from the host can be given to it.
ARG FOLIO_UID=10001

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1 PYTHONPATH=/app FOLIO_VAR_DIR=/app/var \
    DJANGO_SETTINGS_MODULE=webapp.settings
WORKDIR /app

RUN groupadd --system --gid "$FOLIO_UID" folio \
    && useradd --system --uid "$FOLIO_UID" --gid folio --home-dir /home/folio --create-home folio

# LibreOffice, Debian's headless packages: the workers read DOC, XLS, PPT and RTF with it and
# draw the pages of Office and OpenDocument files (model/formats/libreoffice.py), and the web
# process accepts those formats only where it is installed. It comes from Debian's archive, so
# this layer needs the network once (Docker caches it, before the wheelhouse's layers); a
# build with no network at all passes `--build-arg LIBREOFFICE=0`, and its server then refuses
# the legacy formats saying what to install and shows Office pages without images. DejaVu and
# Liberation (metric-compatible with Arial, Times New Roman and Courier New) keep documents'
# line breaks close to Office's.
# LibreOffice runs without a network (model/formats/sandbox.py): Docker's default seccomp
# profile denies the image's user a namespace of its own, so the workers put it under a
# seccomp filter instead (libseccomp2, from the base image; FOLIO_CONVERTER_SANDBOX=auto).
ARG LIBREOFFICE=1
RUN if [ "$LIBREOFFICE" = 1 ]; then \
        apt-get update \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            libreoffice-writer-nogui libreoffice-calc-nogui libreoffice-impress-nogui \
            fonts-dejavu-core fonts-liberation2 \
        && rm -rf /var/lib/apt/lists/*; \
    fi

# Tesseract's language data for the scripts RapidOCR's bundled models do not read (the
# library comes inside the tesserocr wheel): Korean, Arabic, Persian, Hebrew, Russian, Greek,
# Hindi and Thai. Add a tesseract-ocr-<code> package for another (README, "OCR languages").
ARG TESSERACT=1
RUN if [ "$TESSERACT" = 1 ]; then \
        apt-get update \
        && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
            tesseract-ocr-kor tesseract-ocr-ara tesseract-ocr-fas tesseract-ocr-heb \
            tesseract-ocr-rus tesseract-ocr-ell tesseract-ocr-hin tesseract-ocr-tha \
        && rm -rf /var/lib/apt/lists/*; \
    fi

# The wheelhouse is mounted for this step only, so no layer of the image keeps it.
COPY deploy/requirements-amd64.lock deploy/requirements-arm64.lock deploy/
RUN --mount=type=bind,source=wheels,target=/tmp/wheels \
    lock="deploy/requirements-$TARGETARCH.lock" \
    && if [ ! -e "$lock" ]; then echo "no lock for $TARGETARCH: amd64 or arm64" >&2; exit 1; fi \
    && if [ "$OFFLINE" = 1 ]; then index="--no-index"; else index=""; fi \
    && if [ "$OFFLINE" = 1 ] && [ ! -d "/tmp/wheels/$TARGETARCH" ]; then \
        echo "wheels/$TARGETARCH is missing: run \`make wheels\` first" >&2; exit 1; fi \
    && pip install $index --find-links "/tmp/wheels/$TARGETARCH" --require-hashes \
        --only-binary=:all: -r "$lock"

# The service's code runs from /app (PYTHONPATH): the server image needs no build backend.
COPY manage.py pyproject.toml README.md ./
COPY model model
COPY webapp webapp
COPY ocr_worker ocr_worker
COPY templates templates
COPY deploy/entrypoint.sh deploy/healthcheck.sh deploy/drain.sh deploy/

# /app/var holds the static files, the beat schedule and, with FOLIO_STORAGE=filesystem, the
# uploads (FOLIO_MEDIA_ROOT=/app/var/media). The folders exist here, owned by folio, so that
# a named volume mounted on one starts with that owner.
# collectstatic reads the settings, which need a key: a throwaway one, in this shell only (the
# image holds no key; a container without DATABASE_URL makes its own under var/).
RUN FOLIO_SECRET_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(48))')" \
    python manage.py collectstatic --no-input -v 0 \
    && mkdir -p /app/var/media /app/var/run \
    && chown -R folio:folio /app/var

USER folio
EXPOSE 8000
HEALTHCHECK --interval=30s --timeout=15s --start-period=90s --retries=3 \
    CMD ["/app/deploy/healthcheck.sh"]
ENTRYPOINT ["/app/deploy/entrypoint.sh"]
CMD ["web"]
