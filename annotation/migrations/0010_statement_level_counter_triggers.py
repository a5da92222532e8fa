"""The counter triggers that were still row-level become statement-level on PostgreSQL (issue 34).

The SQL and what it keeps: ``annotation/counter_triggers/statement_level.py`` (see the package's docstring).
"""

from django.db import migrations

from annotation.counter_triggers import statement_level

# Kept for migrations that read these names from this module.


class Migration(migrations.Migration):
    dependencies = [("annotation", "0009_dashboard_counter_triggers")]

    operations = [migrations.RunPython(statement_level.install, statement_level.uninstall)]
