"""``manage.py export_label_studio --project SLUG --out EXPORT.json [--config-out CONFIG.xml]``:
a project as a Label Studio JSON export and labeling config, for every task type that declares
them (its ``export_formats`` ``label-studio`` and ``label-studio-config``: the questionnaire and
ranking); the same files as the project page's downloads."""

import sys

from django.core.management.base import BaseCommand, CommandError

from annotation import task_types
from core.errors import Refusal
from projects.models import Project
from studies.label_studio import CONFIG_FORMAT as CONFIG
from studies.label_studio import EXPORT_FORMAT as EXPORT

HELP = (
    "Export a project as a Label Studio JSON export (tasks with their data, annotations and "
    "predictions; streamed) and its settings as a labeling config, where its task type writes "
    "Label Studio files."
)


class Command(BaseCommand):
    help = HELP

    def add_arguments(self, parser):
        parser.add_argument("--project", required=True)
        parser.add_argument("--out", help="The JSON export (default: standard output).")
        parser.add_argument("--config-out", help="Where to write the labeling config (XML).")

    def handle(self, *args, project, out=None, config_out=None, **options):
        target = Project.objects.filter(slug=project).first()
        if target is None:
            raise CommandError(f"No project {project!r}.")
        formats = task_types.get(target.task_type).export_formats
        if EXPORT not in formats or CONFIG not in formats:
            writers = [
                t.slug
                for t in task_types.all_task_types()
                if {EXPORT, CONFIG} <= set(t.export_formats)
            ]
            raise CommandError(
                f"A {target.task_type} project is not exported for Label Studio; these task "
                f"types are: {', '.join(writers)}."
            )
        try:
            if config_out:
                with open(config_out, "w", encoding="utf-8") as stream:
                    stream.writelines(formats[CONFIG].stream(target))
            stream = open(out, "w", encoding="utf-8") if out else sys.stdout  # noqa: SIM115
            try:
                stream.writelines(formats[EXPORT].stream(target))
            finally:
                if out:
                    stream.close()
        except Refusal as exc:
            raise CommandError(exc.message) from None
