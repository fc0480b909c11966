# One image for the web process and the CPU workers. (The GPU worker image adds vLLM.)
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app

COPY pyproject.toml README.md ./
COPY model model
COPY webapp webapp
COPY ocr_worker ocr_worker
COPY templates templates
COPY manage.py ./
RUN pip install . && python manage.py collectstatic --no-input -v 0

RUN useradd --create-home folio && mkdir -p /app/var && chown folio /app/var
USER folio
EXPOSE 8000
CMD ["gunicorn", "webapp.wsgi", "--bind", "0.0.0.0:8000", "--workers", "4", "--threads", "4"]
