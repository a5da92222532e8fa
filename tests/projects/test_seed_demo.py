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
    call_command("seed_demo")
    assert Item.objects.filter(project=project).count() == 120
    second = capsys.readouterr().out
    password_line = lambda text: next(line for line in text.splitlines() if "annotator1 " in line)  # noqa: E731
    assert password_line(first) != password_line(second)  # new passwords every run
