"""API tokens moved to django-rest-knox (hashed, expiring). DRF's ``authtoken`` app is no longer
installed; its table held every key in plain text, so it is dropped (with its migration records,
so that the app could be installed again from scratch). Existing clients ask for a new token."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("projects", "0004_import_job_options")]

    operations = [
        migrations.RunSQL(
            [
                "DROP TABLE IF EXISTS authtoken_token",
                "DELETE FROM django_migrations WHERE app = 'authtoken'",
            ],
            reverse_sql=migrations.RunSQL.noop,
        )
    ]
