"""Write each translation catalogue's ``.mo`` from its ``.po``, in pure Python (no GNU gettext):
``locale/`` and every app's ``locale/`` (task types keep their own). ``--check`` writes nothing
and exits 1 when a committed ``.mo`` is not what its ``.po`` compiles to."""

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError

from core.catalogs import compile_file, po_files


class Command(BaseCommand):
    help = "Compile every .po catalogue to its .mo (pure Python); --check only compares."

    def add_arguments(self, parser):
        parser.add_argument("--check", action="store_true", help="compare, write nothing")

    def handle(self, *args, check: bool = False, **options):
        stale = []
        for po in po_files(settings.BASE_DIR):
            mo = po.with_suffix(".mo")
            data = compile_file(po)
            if mo.exists() and mo.read_bytes() == data:
                continue
            stale.append(mo)
            if not check:
                mo.write_bytes(data)
                self.stdout.write(f"wrote {mo.relative_to(settings.BASE_DIR)}")
        if check and stale:
            names = ", ".join(str(mo.relative_to(settings.BASE_DIR)) for mo in stale)
            raise CommandError(f"out of date (run manage.py compile_catalogs): {names}")
