"""Formats you can see: every import format of every task type has an example file, built from
the task type's own definitions, offered next to the import form and in docs/formats.md; each
example imports."""

import io
from pathlib import Path

import pytest
from django.test import Client

from annotation import task_types
from studies.formats_doc import formats_markdown
from studies.services.imports import available_formats, import_items
from tests import factories

REPO = Path(__file__).resolve().parents[2]
CASES = [
    (t.slug, fmt) for t in task_types.all_task_types() for fmt in available_formats(task_type=t)
]


@pytest.mark.parametrize(("slug", "fmt"), CASES)
def test_every_formats_example_file_imports(db, slug, fmt):
    task_type = task_types.get(slug)
    files = task_type.example_files()
    assert fmt in files, f"{slug} has no example file for its {fmt} format"
    options = {"mapping": files[f"{fmt} mapping"]} if f"{fmt} mapping" in files else None
    project = factories.ProjectFactory(task_type=slug)
    report = import_items(project=project, stream=io.StringIO(files[fmt]), fmt=fmt, options=options)
    assert report.created >= 1 and project.items.count() == report.created


def test_docs_formats_md_is_written_from_the_task_types():
    written = (REPO / "docs" / "formats.md").read_text(encoding="utf-8")
    assert written == formats_markdown(), "run: manage.py formats --out docs/formats.md"


def test_the_project_page_offers_the_examples_for_download(project, researcher):
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/p/{project.slug}/").content.decode()
    for fmt in available_formats(task_type=task_types.get(project.task_type)):
        url = f"/formats/{project.task_type}/{fmt}/"
        assert url in page
        response = client.get(url)
        assert response.status_code == 200
        assert response["Content-Disposition"].startswith("attachment;")
        assert response.content.decode() == task_types.get(project.task_type).example_files()[fmt]
    assert client.get(f"/formats/{project.task_type}/nope/").status_code == 404
    assert client.get("/formats/nope/jsonl/").status_code == 404
