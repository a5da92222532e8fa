"""``manage.py import_label_studio``: one command for every task type that reads Label Studio
projects (it calls the task type's hook), refusing one that does not before anything changes."""

import io

import pytest
from django.core.management import CommandError, call_command

from annotation.models import ExternalAnnotation, Item
from projects.audit import AuditKind
from projects.models import AuditEntry, Project
from tests import factories
from tests.task_types.questionnaire import test_label_studio as questionnaire_ls
from tests.task_types.ranking import test_label_studio as ranking_ls


def _run(module, **options) -> str:
    out = io.StringIO()
    call_command(
        "import_label_studio",
        str(module.HERE / "export.json"),
        config=str(module.HERE / "config.xml"),
        stdout=out,
        **options,
    )
    return out.getvalue()


def test_it_creates_a_ranking_project_from_the_rankers(db):
    researcher = factories.UserFactory()
    text = _run(ranking_ls, project="ls-ranks", create_for=researcher.username, task_type="ranking")
    project = Project.objects.get(slug="ls-ranks")
    assert "Project: ls-ranks (ranking)." in text
    assert project.task_type == "ranking"
    assert [c["name"] for c in project.config["criteria"]] == ["overall", "coverage"]
    assert "Imported 2 items, " in text and "rankings" in text
    assert Item.objects.filter(project=project).count() == 2
    assert ExternalAnnotation.objects.filter(item__project=project).count() == 3
    assert project.memberships.filter(user=researcher, role="researcher").exists()
    created = AuditEntry.objects.get(project=project, kind=AuditKind.PROJECT_CREATED)
    assert created.actor == researcher and "via manage.py import_label_studio" in created.summary


@pytest.mark.parametrize(
    ("task_type", "module", "items"),
    [("ranking", ranking_ls, 2), ("questionnaire", questionnaire_ls, 4)],
)
def test_it_imports_into_an_existing_project_of_its_task_type(db, task_type, module, items):
    project = factories.ProjectFactory(task_type=task_type, config={})
    text = _run(module, project=project.slug)
    assert f"Imported {items} items" in text and f"Project: {project.slug} ({task_type})." in text
    assert Item.objects.filter(project=project).count() == items


def test_it_refuses_a_task_type_without_label_studio_and_creates_nothing(db):
    researcher = factories.UserFactory()
    with pytest.raises(CommandError, match="A stance project does not read Label Studio projects"):
        _run(ranking_ls, project="nope", create_for=researcher.username, task_type="stance")
    assert not Project.objects.filter(slug="nope").exists()
    existing = factories.ProjectFactory(task_type="stance")
    with pytest.raises(CommandError, match="these task types do: .*questionnaire"):
        _run(ranking_ls, project=existing.slug)
    assert not Item.objects.filter(project=existing).exists()
    with pytest.raises(CommandError, match="A no-such-type project does not read"):
        _run(ranking_ls, project="x", create_for=researcher.username, task_type="no-such-type")


def test_a_missing_or_non_utf8_file_is_refused_naming_it(db, tmp_path):
    project = factories.ProjectFactory(task_type="ranking", config={})
    latin = tmp_path / "config.xml"
    latin.write_bytes("<View><Header value='Qualité'/></View>".encode("latin-1"))
    export = str(ranking_ls.HERE / "export.json")
    with pytest.raises(CommandError, match=r"The labeling config is not UTF-8 text \(byte \d+\)"):
        call_command("import_label_studio", export, config=str(latin), project=project.slug)
    with pytest.raises(CommandError, match="No such export file: .*nope.json"):
        call_command(
            "import_label_studio", str(tmp_path / "nope.json"), config=str(latin), project="x"
        )
    assert not Item.objects.filter(project=project).exists()


@pytest.mark.parametrize(
    ("task_type", "module"), [("ranking", ranking_ls), ("questionnaire", questionnaire_ls)]
)
def test_the_export_command_writes_files_the_import_command_reads_back(
    db, tmp_path, task_type, module
):
    project = factories.ProjectFactory(task_type=task_type, config={})
    _run(module, project=project.slug)
    out, config = tmp_path / "export.json", tmp_path / "config.xml"
    call_command("export_label_studio", project=project.slug, out=str(out), config_out=str(config))
    copy = factories.ProjectFactory(task_type=task_type, config={})
    text = io.StringIO()
    call_command(
        "import_label_studio", str(out), config=str(config), project=copy.slug, stdout=text
    )
    assert Item.objects.filter(project=copy).count() == Item.objects.filter(project=project).count()
    assert ExternalAnnotation.objects.filter(item__project=copy).count() == (
        ExternalAnnotation.objects.filter(item__project=project).count()
    )


def test_the_export_command_refuses_a_task_type_without_label_studio_files(db):
    project = factories.ProjectFactory(task_type="stance")
    with pytest.raises(CommandError, match="A stance project is not exported for Label Studio"):
        call_command("export_label_studio", project=project.slug)
