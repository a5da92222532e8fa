"""Every new project goes through ``projects.services.project_create`` (issue 25, item 7): the
row, its first settings version, the "project created" audit entry, the members given and its
creator as researcher, all in one transaction, whichever door it came in by (a study file, the
admin, a Label Studio import, a demo, a replay; tests/test_house.py forbids any other)."""

import pytest

from core.errors import Refusal
from projects.audit import AuditKind
from projects.models import AuditEntry, Membership, Project, ProjectSettingsVersion
from projects.services import project_create
from tests import factories


def _kinds(project) -> list[tuple[str, str]]:
    return [
        (entry.kind, entry.summary)
        for entry in AuditEntry.objects.filter(project=project).order_by("id")
    ]


def test_a_new_project_has_its_settings_version_its_audit_entry_and_its_creator(db):
    creator = factories.UserFactory(username="ada")
    project = project_create(
        project=Project(slug="fresh", name="Fresh", task_type="stance", guidelines="Read."),
        by=creator,
        via="test",
    )
    assert project.pk is not None and project.created_by == creator
    (version,) = ProjectSettingsVersion.objects.filter(project=project)
    assert (version.number, version.via, version.created_by, version.guidelines) == (
        1,
        "test",
        creator,
        "Read.",
    )
    assert project.settings_version == 1
    assert _kinds(project) == [
        (AuditKind.PROJECT_CREATED, "Created the project 'Fresh' (stance) via test."),
        (AuditKind.MEMBER_ADDED, "Added ada as researcher (the project's creator)."),
    ]
    assert Membership.objects.get(project=project, user=creator).role == "researcher"


def test_the_members_given_are_added_and_a_listed_creator_keeps_the_listed_role(db):
    creator = factories.UserFactory(username="grace")
    factories.UserFactory(username="alan")
    project = project_create(
        project=Project(slug="listed", name="Listed", task_type="stance"),
        by=creator,
        via="test",
        members=[
            {"username": "alan", "role": "researcher"},
            {"username": "grace", "role": "annotator"},
        ],
    )
    roles = {m.user.username: m.role for m in Membership.objects.filter(project=project)}
    assert roles == {"alan": "researcher", "grace": "annotator"}


def test_a_refused_member_leaves_no_project(db):
    creator = factories.UserFactory()
    with pytest.raises(Refusal, match=r"members\[0\]\.username: No active account"):
        project_create(
            project=Project(slug="refused", name="Refused", task_type="stance"),
            by=creator,
            via="test",
            members=[{"username": "nobody-here", "role": "annotator"}],
        )
    assert not Project.objects.filter(slug="refused").exists()


def test_a_creator_who_does_not_join_is_no_member(db):
    staff = factories.UserFactory(is_staff=True, is_superuser=True)
    project = project_create(
        project=Project(slug="staffs", name="Staff's", task_type="stance"),
        by=staff,
        via="admin",
        creator_joins=False,
    )
    assert not Membership.objects.filter(project=project).exists()
    assert [kind for kind, _ in _kinds(project)] == [AuditKind.PROJECT_CREATED]


def test_a_saved_project_is_refused(db):
    project = factories.ProjectFactory()
    with pytest.raises(ValueError, match="project_create saves a new project; .* exists"):
        project_create(project=project, by=None, via="test")
