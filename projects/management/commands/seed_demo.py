"""Demo data: one researcher, three annotators and a project of every built-in task type.

Passwords are generated on every run and printed (existing demo accounts get new ones), so no
fixed password ever ships with Concord.
"""

import io
import json
import secrets
from pathlib import Path

from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from projects.models import Membership, Project
from projects.services.imports import import_items

DATA = Path(settings.BASE_DIR) / "data"

CITATION_GUIDELINES = """\
## Your task
You see a **claim**, its veracity label, the **evidence** passages a fact-checking system used, and
the system's **explanation** of the verdict. One evidence passage is **highlighted**: its citation
markers (like `[9]`) were removed from the explanation.

1. Select every explanation sentence that should cite the highlighted evidence — click a sentence or
   press its number key. Several sentences may be chosen.
2. If no sentence should cite it, choose **No sentence should cite this evidence** (key `0`).
3. Rate how helpful the explanation is in clarifying the truthfulness of the claim (0–100). Move the
   slider at least once.
4. Press **Enter** or **Submit**. You can reopen previous items from *Previous items*.

Other citation markers stay in the text: they refer to the other passages by their numbers.
"""


class Command(BaseCommand):
    help = "Create demo accounts and one demo project per task type (idempotent)."

    def handle(self, *args, **options):
        User = get_user_model()
        accounts = []
        with transaction.atomic():
            researcher = self._account(User, "researcher", accounts, staff=True)
            annotators = [self._account(User, f"annotator{i}", accounts) for i in (1, 2, 3)]
            self._citation_recovery(researcher, annotators)

        self.stdout.write(self.style.SUCCESS("Demo accounts (passwords are new on every run):"))
        for username, password in accounts:
            self.stdout.write(f"  {username:<12} {password}")

    def _account(self, User, username, accounts, staff=False):
        password = secrets.token_urlsafe(9)
        user, _ = User.objects.get_or_create(username=username)
        user.is_staff = staff
        user.is_superuser = staff
        user.set_password(password)
        user.save()
        accounts.append((username, password))
        return user

    def _members(self, project, researcher, annotators):
        Membership.objects.get_or_create(
            project=project, user=researcher, defaults={"role": Membership.Role.RESEARCHER}
        )
        for annotator in annotators:
            Membership.objects.get_or_create(
                project=project, user=annotator, defaults={"role": Membership.Role.ANNOTATOR}
            )

    def _citation_recovery(self, researcher, annotators):
        project, created = Project.objects.get_or_create(
            slug="citation-recovery-gpt4",
            defaults={
                "name": "Citation recovery · GPT-4 explanations",
                "task_type": "citation_recovery",
                "config": {"masking": "sample", "seed": 13, "keep_other_markers": True},
                "guidelines": CITATION_GUIDELINES,
                "annotators_per_item": 3,
                "created_by": researcher,
            },
        )
        self._members(project, researcher, annotators)
        if not created and project.items.exists():
            return
        folder = DATA / "transparent-fcexp"
        keys = json.loads((folder / "hit_sample_keys.json").read_text())
        records = json.loads((folder / "gpt4_full_data.json").read_text())
        subset = {key: records[key] for key in keys if key in records}
        report = import_items(project=project, stream=io.StringIO(json.dumps(subset)), fmt="transparent-fcexp")
        self.stdout.write(f"{project.name}: {report.summary()}")
