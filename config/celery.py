"""Celery application.

With no ``REDIS_URL`` the settings switch Celery to eager mode, so ``make run`` needs no broker:
tasks run in-process, synchronously, exactly as a worker would run them.
"""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("concord")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(related_name="celery_tasks")
