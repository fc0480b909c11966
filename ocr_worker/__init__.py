"""Folio's Celery workers: thin tasks over webapp.jobs.services and the engines in model/."""

from ocr_worker.celery_app import app

__all__ = ["app"]
