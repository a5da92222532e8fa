"""Demo data: one researcher, three annotators and a demo project per task type.

Passwords are generated on every run and printed (existing demo accounts get new ones), so no
fixed password ever ships with Concord.
"""

import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from projects.models import Membership, Project
from studies.demos import demos
from studies.replays import replays


class Command(BaseCommand):
    help = "Create demo accounts and one demo project per task type (idempotent)."

    def handle(self, *args, **options):
        User = get_user_model()
        accounts = []
        with transaction.atomic():
            researcher = self._account(User, "researcher", accounts, staff=True)
            annotators = [self._account(User, f"annotator{i}", accounts) for i in (1, 2, 3)]
            for demo in demos():
                summary = demo.create(researcher=researcher, annotators=annotators)
                self.stdout.write(f"  [{demo.name}] {summary}")
        # Every source study, replayed once: a finished study of each kind, dashboard included.
        for replay in replays():
            if not Project.objects.filter(slug=replay.slug).exists():
                replay.run(scale=1, seed=87)
            Membership.objects.get_or_create(
                project=Project.objects.get(slug=replay.slug),
                user=researcher,
                defaults={"role": Membership.Role.RESEARCHER},
            )
            self.stdout.write(
                f"  [replay {replay.name}] {replay.title}: /p/{replay.slug}/agreement/"
            )

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
