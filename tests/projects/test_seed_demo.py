from django.core.management import call_command

from annotation.models import Item
from projects.models import Membership, Project
from studies.management.commands import seed_demo
from studies.replays import replays


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


def test_make_run_seeds_demos_first_and_builds_replays_beside_the_server(db, capsys, monkeypatch):
    # make run: accounts and demos, then the server serves while --replays-only builds replays
    # (two of them here, the quick ones: the test above builds them all).
    quick = [r for r in replays() if r.name in ("reprohum", "fastfact")]
    monkeypatch.setattr(seed_demo, "replays", lambda: quick)
    call_command("seed_demo", "--without-replays")
    first = capsys.readouterr().out
    assert "annotator1 " in first and "[replay" not in first
    assert not Project.objects.filter(slug__startswith="replay-").exists()
    researcher = Membership.objects.filter(user__username="researcher").first().user
    password = researcher.password

    call_command("seed_demo", "--replays-only")
    second = capsys.readouterr().out
    assert "annotator1 " not in second  # passwords are left as they are
    researcher.refresh_from_db()
    assert researcher.password == password
    assert "[replay reprohum]" in second and "built in" in second
    replayed = Project.objects.get(slug="replay-reprohum")
    assert Membership.objects.get(project=replayed, user=researcher).role == "researcher"

    # A replay cut short (its project exists, the researcher not yet joined) is built again.
    Membership.objects.filter(project=replayed, user=researcher).delete()
    replayed.items.all().delete()
    call_command("seed_demo", "--replays-only")
    third = capsys.readouterr().out
    rebuilt = Project.objects.get(slug="replay-reprohum")
    assert rebuilt.items.count() > 0 and rebuilt.items.first().annotations.count() == 3
    assert third.count("built in") == 1 and third.count("(already built)") == 1


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
