"""ImportJob and ImportJobPart move to ``studies`` (beside their service, view and task).

State only: their tables keep their names (``projects_importjob``, ``projects_importjobpart``, set
as ``db_table`` on the models in ``studies``) and every row; ``studies`` 0004 takes them over."""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [
        ("projects", "0013_membership_language"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.RemoveField(model_name="importjobpart", name="job"),
                migrations.DeleteModel(name="ImportJob"),
                migrations.DeleteModel(name="ImportJobPart"),
            ],
            database_operations=[],
        ),
    ]
