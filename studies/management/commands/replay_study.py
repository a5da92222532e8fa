"""Run a source study on Concord from set-up to its paper's tables (see ``studies.replays``)."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from core.registry import NotRegistered
from studies.replays import replay_registry, replays, write_tables


class Command(BaseCommand):
    help = (
        "Replay a source study: set it up as its paper describes, import its items, let "
        "simulated annotators work through the annotation API, and write the paper's tables."
    )

    def add_arguments(self, parser):
        parser.add_argument("name", nargs="?", help="The study (omit to list them).")
        parser.add_argument("--scale", type=int, default=1, help="Size multiplier (default 1).")
        parser.add_argument("--seed", type=int, default=87)
        parser.add_argument(
            "--out", default="replays", help="Folder for the tables as CSV (default: replays/)."
        )

    def handle(self, *args, name=None, scale=1, seed=87, out="replays", **options):
        if not name:
            for replay in replays():
                self.stdout.write(f"{replay.name:<18} {replay.title}")
            return
        if scale < 1 or scale > 100:
            raise CommandError("--scale must be between 1 and 100.")
        try:
            replay = replay_registry.get(name)
        except NotRegistered as exc:
            raise CommandError(str(exc)) from None
        result = replay.run(scale=scale, seed=seed)
        for note in result.notes:
            self.stdout.write(note)
        for path in write_tables(result, Path(out)):
            self.stdout.write(f"  wrote {path}")
        self.stdout.write(
            self.style.SUCCESS(
                f"{replay.title}: project {result.project.slug} "
                f"(dashboard: /p/{result.project.slug}/agreement/)"
            )
        )
