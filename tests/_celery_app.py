"""A Celery app that allows its own classes: ``register`` runs here, in the module the worker
imports, so the callers and the worker allow the same ones."""

from __future__ import annotations

import amber.contrib.kombu
from _celery_tasks import configure, install
from _celery_types import MONEY, Point
from celery import Celery

amber.contrib.kombu.register(types=[Point], custom=[MONEY])

app = Celery("amber_types")
configure(app, "amber")
tasks = install(app)
