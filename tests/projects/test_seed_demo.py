from django.core.management import call_command

from annotation.models import Item
from projects.models import Membership, Project


def test_seed_demo_creates_accounts_and_a_project_per_demo_and_is_idempotent(db, capsys):
    call_command("seed_demo")
    first = capsys.readouterr().out
    assert "researcher" in first and "annotator3" in first
    project = Project.objects.get(slug="citation-recovery-gpt4")
    assert Item.objects.filter(project=project).count() == 120
    assert Membership.objects.filter(project=project, role="annotator").count() == 3
    # Every source study is replayed once, and the demo researcher can open its dashboard.
    replayed = Project.objects.get(slug="replay-reprohum")
    assert Membership.objects.get(project=replayed, user__username="researcher").role == (
        "researcher"
    )
    answers = replayed.items.first().annotations.count()
    assert answers == 3 and "[replay reprohum]" in first
    call_command("seed_demo")
    assert replayed.items.first().annotations.count() == answers  # not replayed twice
    assert Item.objects.filter(project=project).count() == 120
    second = capsys.readouterr().out
    password_line = lambda text: next(line for line in text.splitlines() if "annotator1 " in line)  # noqa: E731
    assert password_line(first) != password_line(second)  # new passwords every run


def test_the_admin_offers_registered_task_types_and_validates_config(admin_client):
    page = admin_client.get("/admin/projects/project/add/")
    assert b'value="citation_recovery"' in page.content
    response = admin_client.post(
        "/admin/projects/project/add/",
        {
            "slug": "p1",
            "name": "P1",
            "task_type": "citation_recovery",
            "config__masking": "everything",
            "guidelines": "",
            "annotators_per_item": 3,
            "status": "active",
            "memberships-TOTAL_FORMS": 0,
            "memberships-INITIAL_FORMS": 0,
        },
    )
    assert response.status_code == 200 and b"config.masking: Select a valid choice" in (
        response.content
    )
    assert not Project.objects.filter(slug="p1").exists()
