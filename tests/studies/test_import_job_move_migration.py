"""The move of ImportJob and ImportJobPart from ``projects`` to ``studies`` (projects 0014,
studies 0004), run on a database populated as the previous ``main`` stored it: a project with a
finished job, a queued job with its upload in parts, and the content type permissions hang on.
Every row is read back through the models in ``studies``, the foreign keys still cascade, new
jobs take new ids, and the content type keeps its id."""

import pytest
from django.contrib.contenttypes.models import ContentType
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("projects", "0013_membership_language"), ("studies", "0003_item_browser_figures")]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps


def latest():
    return MigrationExecutor(connection).loader.graph.leaf_nodes()


def before():
    """Every other app at its latest migration; projects and studies as the previous main."""
    moved = {app for app, _ in BEFORE}
    return [node for node in latest() if node[0] not in moved] + BEFORE


@pytest.fixture
def back_to_latest():
    """Whatever happens in the test, the database ends at the latest migrations."""
    yield
    migrate(latest())
    ContentType.objects.clear_cache()


def _old_rows(old):
    User = old.get_model("auth", "User")
    Project = old.get_model("projects", "Project")
    ImportJob = old.get_model("projects", "ImportJob")
    ImportJobPart = old.get_model("projects", "ImportJobPart")
    OldContentType = old.get_model("contenttypes", "ContentType")
    # As main's post_migrate left it: the content type under projects, none under studies.
    OldContentType.objects.filter(app_label="studies", model="importjob").delete()
    content_type, _ = OldContentType.objects.get_or_create(app_label="projects", model="importjob")
    user = User.objects.create(username="ada")
    project = Project.objects.create(slug="p", name="P", task_type="citation_recovery")
    done = ImportJob.objects.create(
        project=project,
        created_by=user,
        filename="items.jsonl",
        fmt="jsonl",
        size=12,
        status="done",
        message="2 items created.",
        report={"records": 2, "created": 2},
        options={"mapping": "m.csv"},
    )
    queued = ImportJob.objects.create(project=project, filename="more.csv", fmt="csv", size=6)
    for index, data in enumerate([b"abc", b"\x00\xffz"]):
        ImportJobPart.objects.create(job=queued, index=index, data=data)
    return {"project": project.pk, "done": done.pk, "queued": queued.pk, "ct": content_type.pk}


@pytest.mark.django_db(transaction=True)
def test_import_jobs_and_their_parts_are_read_through_studies_after_the_move(back_to_latest):
    old = _old_rows(migrate(before()))
    migrate(latest())
    ContentType.objects.clear_cache()

    from projects.models import Project
    from studies.models import ImportJob, ImportJobPart

    project = Project.objects.get(pk=old["project"])
    assert [job.pk for job in project.import_jobs.all()] == [old["queued"], old["done"]]
    done = ImportJob.objects.get(pk=old["done"])
    assert (done.filename, done.fmt, done.size, done.status) == ("items.jsonl", "jsonl", 12, "done")
    assert done.report == {"records": 2, "created": 2} and done.options == {"mapping": "m.csv"}
    assert done.created_by.username == "ada" and done.message == "2 items created."
    queued = ImportJob.objects.get(pk=old["queued"])
    assert [bytes(p.data) for p in queued.parts.order_by("index")] == [b"abc", b"\x00\xffz"]
    assert ContentType.objects.get_for_model(ImportJob).pk == old["ct"]
    assert not ContentType.objects.filter(app_label="projects", model="importjob").exists()

    newer = ImportJob.objects.create(project=project, filename="n.jsonl", fmt="jsonl")
    assert newer.pk > max(old["done"], old["queued"])  # the table's id sequence carried on
    project.delete()  # the foreign keys still cascade from the project through the jobs
    assert not ImportJob.objects.exists() and not ImportJobPart.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_the_move_undoes_to_the_previous_state(back_to_latest):
    migrate(latest())
    old = migrate(before())
    ImportJob = old.get_model("projects", "ImportJob")
    assert ImportJob._meta.db_table == "projects_importjob"
    with pytest.raises(LookupError):
        old.get_model("studies", "ImportJob")
