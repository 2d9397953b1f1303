"""A Celery app for a broker that others can write to: it sends and accepts only signed amber.

NEW_KEY signs; OLD_KEY is still accepted while the rotation runs. Test secrets, not real ones.
"""

from __future__ import annotations

import amber.contrib.kombu
from _celery_tasks import configure, install
from _celery_types import Point
from celery import Celery

NEW_KEY = b"new signing secret for the tests, 2026"
OLD_KEY = b"old signing secret for the tests, 2025"

amber.contrib.kombu.register_signed(NEW_KEY, fallback_keys=[OLD_KEY], max_age=600, types=[Point])

app = Celery("amber_signed")
configure(app, "amber-signed")
tasks = install(app)
