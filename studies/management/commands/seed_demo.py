"""Demo data: one researcher, three annotators and a demo project per task type.

Passwords are generated on every run and printed (existing demo accounts get new ones), so no
fixed password ever ships with Concord. The source-study replays take most of the time (3 min 10 s
at load 10 on a 2-core machine), so ``make run`` seeds ``--without-replays`` and builds them
with ``--replays-only`` in the background while the server already serves; each line says how
long its step took.
"""

import secrets
import time

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand
from django.db import transaction

from projects.models import Membership, Project
from studies.demos import demos
from studies.replays import replays


class Command(BaseCommand):
    help = "Create demo accounts and one demo project per task type (idempotent)."

    def add_arguments(self, parser):
        which = parser.add_mutually_exclusive_group()
        which.add_argument(
            "--without-replays",
            action="store_true",
            help="accounts and demo projects only (make run builds the replays afterwards)",
        )
        which.add_argument(
            "--replays-only",
            action="store_true",
            help="only the source-study replays not built yet; passwords are left as they are",
        )

    def handle(self, *args, **options):
        if not options["replays_only"]:
            self._accounts_and_demos()
        if not options["without_replays"]:
            self._replays()

    def _accounts_and_demos(self) -> None:
        User = get_user_model()
        accounts: list[tuple[str, str]] = []
        with transaction.atomic():
            researcher = self._account(User, "researcher", accounts, staff=True)
            annotators = [self._account(User, f"annotator{i}", accounts) for i in (1, 2, 3)]
            for demo in demos():
                started = time.monotonic()
                summary = demo.create(researcher=researcher, annotators=annotators)
                self.stdout.write(f"  [{demo.name}] {summary} ({_seconds(started)})")
        self.stdout.write(self.style.SUCCESS("Demo accounts (passwords are new on every run):"))
        for username, password in accounts:
            self.stdout.write(f"  {username:<12} {password}")

    def _replays(self) -> None:
        """Every source study, replayed once: a finished study of each kind, dashboard included.

        The demo researcher joins a replay's project only once it is finished, so a replay cut
        short (make run stopped half-way) is built again on the next run, never shown half-built.
        """
        researcher, _ = get_user_model().objects.get_or_create(username="researcher")
        for replay in replays():
            started = time.monotonic()
            built = not Membership.objects.filter(
                project__slug=replay.slug, user=researcher
            ).exists()
            if built:
                replay.run(scale=1, seed=87)
            Membership.objects.get_or_create(
                project=Project.objects.get(slug=replay.slug),
                user=researcher,
                defaults={"role": Membership.Role.RESEARCHER},
            )
            took = f" (built in {_seconds(started)})" if built else " (already built)"
            self.stdout.write(
                f"  [replay {replay.name}] {replay.title}: /p/{replay.slug}/agreement/{took}"
            )

    def _account(self, User, username, accounts, staff=False):
        password = secrets.token_urlsafe(9)
        user, _ = User.objects.get_or_create(username=username)
        user.is_staff = staff
        user.is_superuser = staff
        user.set_password(password)
        user.save()
        accounts.append((username, password))
        return user


def _seconds(started: float) -> str:
    return f"{time.monotonic() - started:.1f} s"
