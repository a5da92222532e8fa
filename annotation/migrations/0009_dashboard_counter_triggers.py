"""Database triggers for the dashboard's counters (issue 16), beside those of 0007.

The SQL and what it keeps: ``annotation/counter_triggers/dashboard.py`` (see the package's docstring).
"""

from django.db import migrations

from annotation.counter_triggers import dashboard

# Kept for migrations that read these names from this module.
SQLITE = dashboard.SQLITE
TRIGGERS = dashboard.TRIGGERS


class Migration(migrations.Migration):
    dependencies = [("annotation", "0008_dashboard_counters")]

    operations = [migrations.RunPython(dashboard.install, dashboard.uninstall)]
