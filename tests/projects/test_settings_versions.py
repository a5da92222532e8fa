"""Issue 30 item 4: guidelines and task settings are versioned; every answer records the version
it was made under (an answer made before a change keeps the old one), the project page shows each
version's changes, the dashboard filters by version, and exports and bundles carry it."""

import csv
import io
import json

import pytest
from django.contrib import admin
from django.test import Client, RequestFactory

from agreement.reports import ReportOptions
from agreement.reports.gather import gather
from annotation import services
from annotation.models import Annotation
from projects.models import Project, ProjectSettingsVersion
from projects.selectors import settings_versions
from studies.bundles import bundle_write
from studies.services.exports import export_csv, export_jsonl
from studies.study_files import study_apply, study_export
from studies.study_forms import study_form_for
from tests import factories
from tests.studies.test_study_pages import browser_data

ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}


@pytest.fixture
def study(project, researcher):
    project.guidelines = "Read the claim.\nPick the sentences.\n"
    project.save()
    factories.make_items(project, 4)
    annotators = []
    for _ in range(2):
        user = factories.UserFactory()
        factories.MembershipFactory(project=project, user=user, role="annotator")
        annotators.append(user)
    return project, annotators


def answer_one(project, user) -> Annotation:
    assignment = services.assignment_next(project=project, annotator=user)
    annotation, created = services.annotation_submit(assignment=assignment, answer=ANSWER)
    assert created
    return annotation


def change_guidelines_on_the_settings_page(project, researcher, text: str):
    client = Client()
    client.force_login(researcher)
    form = study_form_for(project.task_type)(project=project)
    data = {**browser_data(form), "guidelines": text.replace("\n", "\r\n"), "action": "save"}
    response = client.post(f"/p/{project.slug}/settings/", data)
    assert response.status_code == 302, response.content.decode()[:2000]
    return client


def test_an_answer_made_before_a_guideline_change_keeps_the_old_version_and_exports_carry_it(
    study, researcher
):
    project, (first, second) = study
    assert project.settings_version == 1
    before = answer_one(project, first)
    assert before.settings_version == 1

    client = change_guidelines_on_the_settings_page(
        project, researcher, "Read the claim.\nPick every sentence that cites it.\n"
    )
    project.refresh_from_db()
    assert project.settings_version == 2
    after = answer_one(project, second)
    assert after.settings_version == 2
    before.refresh_from_db()
    assert before.settings_version == 1  # kept
    # The recorded versions: the settings before the change (1) and after it (2).
    rows = list(ProjectSettingsVersion.objects.filter(project=project).order_by("number"))
    assert [(v.number, v.via) for v in rows] == [(1, "as first recorded"), (2, "settings page")]
    assert rows[0].guidelines == "Read the claim.\nPick the sentences.\n"
    assert rows[1].created_by == researcher

    exported = [json.loads(line) for line in "".join(export_jsonl(project=project)).splitlines()]
    by_annotator = {r["annotator"]: r["settings_version"] for r in exported}
    assert sorted(by_annotator.values()) == [1, 2]
    table = list(csv.DictReader(io.StringIO("".join(export_csv(project=project)))))
    assert sorted(r["settings_version"] for r in table) == ["1", "2"]

    # The project page shows the versions and the guidelines' diff.
    page = client.get(f"/p/{project.slug}/").content.decode()
    assert "Version 2 (current)" in page and "settings page" in page
    assert "+Pick every sentence that cites it." in page
    assert "-Pick the sentences." in page
    (newest, oldest) = settings_versions(project=project)
    assert newest.current and newest.guidelines_diff[-2:] == [
        "-Pick the sentences.",
        "+Pick every sentence that cites it.",
    ]
    assert oldest.changes == [] and oldest.guidelines_diff == []

    # The dashboard filters by version: each version's answers alone.
    for version, annotation in ((1, before), (2, after)):
        inp = gather(project=project, options=ReportOptions(n_boot=10, settings_version=version))
        assert [len(a) for a in inp.answers.values()] == [1]
        assert next(iter(inp.answers.values())) == {annotation.item.external_id: ANSWER}
    assert sum(map(len, gather(project=project).answers.values())) == 2
    page = client.get(f"/p/{project.slug}/agreement/?settings_version=1")
    assert page.status_code == 200
    assert '<option value="1" selected>Version 1</option>' in page.content.decode()
    bad = client.get(f"/p/{project.slug}/agreement/?settings_version=x")
    assert bad.status_code == 400 and "settings_version" in bad.content.decode()


def test_study_files_and_the_admin_record_a_version_only_when_something_changed(study, researcher):
    project, _ = study
    exported = study_export(project=project)
    assert study_apply(data=exported, user=researcher)["changes"] == []
    assert not ProjectSettingsVersion.objects.filter(project=project).exists()  # still v1
    changed = {**exported, "config": {**exported["config"], "seed": 14}}
    study_apply(data=changed, user=researcher, via="study file")
    project.refresh_from_db()
    assert project.settings_version == 2
    (newest, _) = settings_versions(project=project)
    assert newest.changes == ["config.seed: 13 → 14"] and newest.via == "study file"
    study_apply(data=changed, user=researcher)
    assert ProjectSettingsVersion.objects.filter(project=project).count() == 2

    # The admin's save: crowd settings changed by a staff member.
    staff = factories.UserFactory(is_staff=True, is_superuser=True)
    request = RequestFactory().post("/admin/")
    request.user = staff
    obj = Project.objects.get(pk=project.pk)
    obj.crowd = {"assignment_strategy": "random"}
    admin.site._registry[Project].save_model(request, obj, form=None, change=True)
    project.refresh_from_db()
    assert project.settings_version == 3
    (newest, *_) = settings_versions(project=project)
    assert newest.via == "admin" and newest.created_by == staff.username
    assert newest.changes == ['crowd.assignment_strategy: added "random"']


def test_bundles_carry_the_versions_and_load_them_back(study, researcher, tmp_path):
    project, (first, second) = study
    answer_one(project, first)
    change_guidelines_on_the_settings_page(project, researcher, "New guidelines.\n")
    answer_one(project, second)
    out = tmp_path / "bundle"
    bundle_write(project=project, out=out)
    versions = [json.loads(line) for line in (out / "settings_versions.jsonl").open()]
    assert [v["number"] for v in versions] == [1, 2]
    assert versions[1]["guidelines"] == "New guidelines.\n"
    rows = [json.loads(line) for line in (out / "annotations.jsonl").open()]
    assert sorted(r["settings_version"] for r in rows) == [1, 2]

    from studies.bundle_loading import bundle_load

    slug = project.slug
    Project.objects.filter(slug=slug).delete()
    loaded = bundle_load(directory=out, user=researcher)
    assert loaded.settings_version == 2
    stored = ProjectSettingsVersion.objects.filter(project=loaded).order_by("number")
    assert [(v.number, v.guidelines) for v in stored] == [
        (1, "Read the claim.\nPick the sentences.\n"),
        (2, "New guidelines.\n"),
    ]
    assert sorted(
        Annotation.objects.filter(item__project=loaded).values_list("settings_version", flat=True)
    ) == [1, 2]
