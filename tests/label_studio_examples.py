"""Shared by the task types' Label Studio tests: a task type's hand-written example files
(``tests/task_types/<slug>/label_studio/``: ``export.json`` and ``config.xml``), a project
imported from them, and, for the browser tests, a researcher's project page."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from tests import factories
from tests.e2e.conftest import login


def example_files(test_file: str) -> tuple[Path, str, str]:
    """The folder of the example files beside ``test_file``, the export's text and the
    labeling config's."""
    here = Path(test_file).parent / "label_studio"
    return here, (here / "export.json").read_text(), (here / "config.xml").read_text()


def imported_example(
    *, task_type: str, import_label_studio: Callable[..., Any], export: str, config: str
) -> tuple[Any, Any]:
    """A new, empty project of ``task_type`` with the export imported (the project reloaded),
    and what the import reported."""
    project = factories.ProjectFactory(task_type=task_type, config={})
    done = import_label_studio(project=project, export=export, labeling_config=config)
    project.refresh_from_db()
    return project, done


def researchers_project(task_type: str) -> tuple[Any, Any]:
    """A researcher and an empty project of ``task_type`` where they are the researcher."""
    researcher = factories.UserFactory()
    project = factories.ProjectFactory(task_type=task_type, config={})
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    return researcher, project


def project_page(browser, live_server, researcher, project, **context_args) -> tuple[Any, Any]:
    """A new browser context (the caller closes it) and its page: ``researcher`` logged in, on
    ``project``'s page."""
    context = browser.new_context(**context_args)
    try:
        page = context.new_page()
        page.set_default_timeout(15_000)
        login(page, live_server, researcher.username, factories.PASSWORD)
        page.goto(f"{live_server.url}/p/{project.slug}/")
    except Exception:
        context.close()
        raise
    return context, page
