"""``manage.py export_label_studio --project SLUG --out EXPORT.json [--config-out CONFIG.xml]``:
a questionnaire project as a Label Studio JSON export and labeling config
(``label_studio_io``)."""

import sys

from django.core.management.base import BaseCommand, CommandError

from core.errors import Refusal
from projects.models import Project
from task_types.questionnaire.label_studio_io import export_label_studio, labeling_config


class Command(BaseCommand):
    help = (
        "Export a questionnaire project as a Label Studio JSON export (tasks with their data, "
        "annotations and predictions; streamed) and its questionnaire as a labeling config."
    )

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--out", help="The JSON export (default: standard output).")
        parser.add_argument("--config-out", help="Where to write the labeling config (XML).")

    def handle(self, *args, project, out=None, config_out=None, **options):
        target = Project.objects.filter(slug=project).first()
        if target is None:
            raise CommandError(f"No project {project!r}.")
        if target.task_type != "questionnaire":
            raise CommandError("Only a questionnaire project is exported for Label Studio.")
        try:
            config = labeling_config(project=target)
            if config_out:
                with open(config_out, "w", encoding="utf-8") as stream:
                    stream.write(config)
            stream = open(out, "w", encoding="utf-8") if out else sys.stdout  # noqa: SIM115
            try:
                for text in export_label_studio(project=target):
                    stream.write(text)
            finally:
                if out:
                    stream.close()
        except Refusal as exc:
            raise CommandError(exc.message) from None
