"""``manage.py import_label_studio EXPORT.json --config LABELING_CONFIG.xml --project SLUG``: a
Label Studio project (its JSON export and labeling config) imported in one step into a project of
any task type that reads Label Studio projects (``TaskType.label_studio``; the questionnaire and
ranking): the task type's ``import_label_studio`` derives the project's config, items and
external coders' answers, all or nothing, and reports what it could not map."""

from pathlib import Path

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from annotation import task_types
from annotation.task_types import TaskType
from core.errors import Refusal
from projects.models import Project
from projects.services import project_create
from studies.management.text_files import read_text_file
from studies.study_files import project_named


def _first_label_studio_task_type() -> str:
    """The task type of a project created without ``--task-type``: the first registered that
    reads Label Studio projects (registry order: INSTALLED_APPS)."""
    return next(t.slug for t in task_types.all_task_types() if t.label_studio)


def _label_studio_task_type(slug: str) -> TaskType:
    """The task type of ``slug``, refused unless it reads Label Studio projects."""
    readers = [t.slug for t in task_types.all_task_types() if t.label_studio]
    try:
        task_type = task_types.get(slug)
    except LookupError:  # no such task type
        task_type = None
    if task_type is None or not task_type.label_studio:
        raise CommandError(
            f"Nothing imported. A {slug} project does not read Label Studio projects; "
            f"these task types do: {', '.join(readers)}."
        )
    return task_type


class Command(BaseCommand):
    help = (
        "Import a Label Studio JSON export read against its labeling config into a project whose "
        "task type reads Label Studio projects (questionnaire, ranking): tasks as items, "
        "annotations and predictions as external coders' answers; all or nothing, with a report "
        "of what could not be mapped."
    )

    def add_arguments(self, parser):
        parser.add_argument("export", help="The Label Studio JSON export (a list of tasks).")
        parser.add_argument("--config", required=True, help="The project's labeling config (XML).")
        parser.add_argument("--project", required=True, help="The project's slug.")
        parser.add_argument(
            "--create-for",
            metavar="USERNAME",
            help="Create the project (named after the slug) with this researcher when it does "
            "not exist.",
        )
        parser.add_argument(
            "--task-type",
            help="The task type of a project created by --create-for (default: the first "
            "registered that reads Label Studio projects, the questionnaire).",
        )

    def handle(self, *args, export, config, project, create_for=None, task_type=None, **options):
        export_text = read_text_file(export, "export file")
        config_text = read_text_file(config, "labeling config")
        try:
            with transaction.atomic():
                target = self._project(
                    project, create_for, task_type or _first_label_studio_task_type()
                )
                done = _label_studio_task_type(target.task_type).import_label_studio(
                    project=target,
                    export=export_text,
                    labeling_config=config_text,
                    source=Path(export).name[:200],
                )
        except Refusal as exc:
            raise CommandError(exc.message) from None
        self.stdout.write(
            self.style.SUCCESS(f"{done.summary()} Project: {target.slug} ({target.task_type}).")
        )
        if done.config_replaced:
            self.stdout.write("The project's settings now come from the labeling config.")
        for line in done.not_mapped:
            self.stdout.write(f"Not mapped: {line}")

    def _project(self, slug: str, create_for: str | None, task_type: str) -> Project:
        found = project_named(slug)
        if found is not None:
            return found
        if not create_for:
            raise CommandError(f"No project {slug!r} (give --create-for USERNAME to create it).")
        _label_studio_task_type(task_type)  # refused before anything is created
        user = get_user_model().objects.filter(username=create_for).first()
        if user is None:
            raise CommandError(f"No user {create_for!r}.")
        return project_create(
            project=Project(slug=slug.lower(), name=slug, task_type=task_type),
            by=user,
            via="manage.py import_label_studio",
        )
