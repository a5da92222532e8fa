"""``manage.py import_label_studio EXPORT.json --config LABELING_CONFIG.xml --project SLUG``: a
Label Studio project (its JSON export and labeling config) as a questionnaire project, its
annotations and predictions as external coders' answers (``label_studio_io``)."""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from core.errors import Refusal
from projects.members import researcher_add
from projects.models import Project
from task_types.questionnaire.label_studio_io import import_label_studio


def _read(path: str, what: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8-sig")
    except FileNotFoundError:
        raise CommandError(f"{path}: no such {what}.") from None
    except UnicodeDecodeError as exc:
        raise CommandError(
            f"Nothing imported. {path} is not UTF-8 text (byte {exc.start})."
        ) from None


class Command(BaseCommand):
    help = (
        "Import a Label Studio JSON export read against its labeling config into a questionnaire "
        "project: tasks as items, annotations and predictions as external coders' answers; all "
        "or nothing, with a report of what could not be mapped."
    )

    def add_arguments(self, parser):
        parser.add_argument("export", help="The Label Studio JSON export (a list of tasks).")
        parser.add_argument("--config", required=True, help="The project's labeling config (XML).")
        parser.add_argument("--project", required=True, help="The questionnaire project's slug.")
        parser.add_argument(
            "--create-for",
            metavar="USERNAME",
            help="Create the project (a questionnaire named after the slug) with this researcher "
            "when it does not exist.",
        )

    def handle(self, *args, export, config, project, create_for=None, **options):
        export_text, config_text = _read(export, "export file"), _read(config, "labeling config")
        try:
            with transaction.atomic():
                target = self._project(project, create_for)
                done = import_label_studio(
                    project=target,
                    export=export_text,
                    labeling_config=config_text,
                    source=Path(export).name[:200],
                )
        except Refusal as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(self.style.SUCCESS(f"{done.summary()} Project: {target.slug}."))
        if done.config_replaced:
            self.stdout.write("The project's questions are now the labeling config's.")
        for line in done.not_mapped:
            self.stdout.write(f"Not mapped: {line}")

    def _project(self, slug: str, create_for: str | None) -> Project:
        found = Project.objects.filter(slug=slug).first()
        if found is not None:
            return found
        if not create_for:
            raise CommandError(f"No project {slug!r} (give --create-for USERNAME to create it).")
        user = get_user_model().objects.filter(username=create_for).first()
        if user is None:
            raise CommandError(f"No user {create_for!r}.")
        created = Project.objects.create(
            slug=slug, name=slug, task_type="questionnaire", created_by=user
        )
        researcher_add(project=created, user=user)
        return created
