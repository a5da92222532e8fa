"""Database triggers that keep ``Item.is_full`` and the project counters (issue 16).

The SQL and what it keeps: ``annotation/counter_triggers/open_queue.py`` (see the package's docstring).
"""

from django.db import migrations

from annotation.counter_triggers import open_queue

# Kept for migrations that read these names from this module.
SQLITE = open_queue.SQLITE
SQLITE_TRIGGERS = open_queue.SQLITE_TRIGGERS


class Migration(migrations.Migration):
    dependencies = [("annotation", "0006_open_queue_and_counts")]

    operations = [migrations.RunPython(open_queue.install, open_queue.uninstall)]
