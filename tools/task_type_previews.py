"""Write each task type's preview picture (``task_types/<slug>/static/<slug>/preview.png``), the
picture the "New study" page shows beside the task type: its annotation page in headless
Chromium at 1200 × 750, halved.

Run against a server with the demo studies (``make run``), as a demo annotator:

    .venv/bin/python tools/task_type_previews.py --password PASSWORD [--base http://127.0.0.1:8000]

Each task type's first demo project (``studies.demos``) is opened at ``/p/SLUG/annotate/``.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default="http://127.0.0.1:8000")
    parser.add_argument("--username", default="annotator1")
    parser.add_argument("--password", required=True)
    args = parser.parse_args()

    import django

    django.setup()
    from playwright.sync_api import sync_playwright

    from projects.models import Project

    targets = {}
    for project in Project.objects.filter(memberships__user__username=args.username).order_by(
        "created_at"
    ):
        targets.setdefault(project.task_type, project.slug)
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path="/usr/bin/chromium",
            headless=True,
            args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"],
        )
        context = browser.new_context(
            viewport={"width": 1200, "height": 750}, device_scale_factor=0.5
        )
        page = context.new_page()
        page.goto(f"{args.base}/login/")
        page.fill("input[name=username]", args.username)
        page.fill("input[name=password]", args.password)
        page.click("button[type=submit]")
        page.wait_for_url(lambda url: "/login" not in url)
        for task_type, slug in sorted(targets.items()):
            page.goto(f"{args.base}/p/{slug}/annotate/")
            page.wait_for_load_state("networkidle")
            out = ROOT / "task_types" / task_type / "static" / task_type / "preview.png"
            page.screenshot(path=str(out))
            print(f"{task_type}: {out.relative_to(ROOT)} ({slug})")
        browser.close()


if __name__ == "__main__":
    main()
