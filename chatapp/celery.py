"""The Celery app, and only the app: what a worker does when it starts and stops is hooked up in
``chatapp/tasks.py`` (``worker/recovery.py``). Anything may import this module to send a task by name;
it imports nothing of clearloop. Workers run with the threads pool; see ``chatapp/worker/runtime.py``."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "chatapp.settings")

# DjangoTask gives every task delay_on_commit (enqueue only after the transaction commits).
app = Celery("clearloop", task_cls="celery.contrib.django.task:DjangoTask")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks(["chatapp"])

EXECUTE_RUN = "chatapp.tasks.execute_run"
