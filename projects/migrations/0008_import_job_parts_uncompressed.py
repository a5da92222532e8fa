"""Store import uploads' parts uncompressed (PostgreSQL ``STORAGE EXTERNAL``; issue 16).

A part is a 1 MiB piece of a JSON Lines or CSV upload, written once and read once: compressing it
on the way in (the default, ``EXTENDED``) cost the database server about as much CPU as the rest
of storing it, for rows that are deleted when the import succeeds. Only the storage strategy
changes; the column, its type and its values do not. Parts already stored stay as they are."""

from django.db import migrations


def set_storage(strategy: str):
    def run(apps, schema_editor):
        connection = schema_editor.connection
        if connection.vendor != "postgresql":
            return  # SQLite has no storage strategies
        with connection.cursor() as cursor:
            cursor.execute(
                f"ALTER TABLE projects_importjobpart ALTER COLUMN data SET STORAGE {strategy}"
            )

    return run


class Migration(migrations.Migration):
    dependencies = [("projects", "0007_import_job_parts")]

    operations = [migrations.RunPython(set_storage("EXTERNAL"), set_storage("EXTENDED"))]
