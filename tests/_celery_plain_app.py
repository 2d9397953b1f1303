"""A Celery app configured for amber by settings alone: no import of amber anywhere in it."""

from __future__ import annotations

from _celery_tasks import configure, install
from celery import Celery

app = Celery("amber_plain")
configure(app, "amber")
tasks = install(app)
