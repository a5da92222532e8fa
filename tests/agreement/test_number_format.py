"""Researcher pages are English (docs/i18n.md), so their numbers are written as English writes
them whatever the browser asks for (a probe's finding: with Accept-Language de the English
dashboard showed decimal commas, and its number inputs got value="0,6", which a browser's
number field cannot read). The page's main content says lang="en"; the top bar still follows
the request's language."""

from __future__ import annotations

import re

import pytest
from django.test import Client
from django.urls import reverse

from tests.agreement import helpers
from tests.agreement.test_judge_validation import _researcher_client
from tests.agreement.test_labels_needed import FIGURE, need_study

DECIMAL_COMMA = re.compile(r"\b\d+,\d+\b")


def _no_decimal_comma(html: str) -> None:
    """No "0,35" in the page's text (charts' point lists "60.2,28.0" are pairs, not numbers)."""
    html = re.sub(r"<svg.*?</svg>", "", html, flags=re.S)
    found = DECIMAL_COMMA.search(html)
    assert found is None, html[max(found.start() - 300, 0) : found.end() + 100]


def _main(html: str) -> str:
    return html.split("<main", 1)[1].split("</main>", 1)[0]


@pytest.fixture(autouse=True)
def fast_passwords(settings):
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


def test_the_dashboard_writes_english_numbers_for_a_german_browser(db, researcher):
    project = helpers.seeded_study(researcher)[0]
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/p/{project.slug}/agreement/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    assert '<html lang="de"' in page  # the top bar follows the browser
    main = _main(page)
    assert main.startswith(' class="page wide" lang="en">')
    assert 'name="transparency_threshold"' in main
    assert 'step="0.05"' in main and 'value="0.6"' in main


@pytest.mark.django_db
def test_the_labels_needed_figures_are_english_for_a_german_browser():
    project = need_study()
    client = _researcher_client(project)
    url = reverse("agreement-judge-validation", args=[project.slug])
    query = {"figure": FIGURE, "judge": "gpt", "width": "0.35"}
    main = _main(client.get(url, query, HTTP_ACCEPT_LANGUAGE="de").content.decode())
    assert re.search(r"the interval is now about \d\.\d{3} wide", main)
    assert re.search(r"λ = \d\.\d{2}\)", main)


def test_the_project_items_and_quality_pages_write_english_numbers_for_a_german_browser(
    db, researcher
):
    # Found by an outside probe: "12 of 12 answers (100,0 %)" and "512,0 MB" on the project
    # page, "0,1 s" on the quality page, for a browser asking for German.
    project = helpers.seeded_study(researcher)[0]
    client = Client()
    client.force_login(researcher)
    for path in ("", "quality/", "items/", "judges/", "members/"):
        page = client.get(f"/p/{project.slug}/{path}", HTTP_ACCEPT_LANGUAGE="de")
        assert page.status_code == 200, path
        main = re.sub(r"<svg.*?</svg>", "", _main(page.content.decode()), flags=re.S)
        # "100,0" or "0,1" (one or two decimals: "100,000" is English for a hundred thousand)
        found = re.search(r"\b\d+,\d{1,2}\b", main)
        assert found is None, (path, main[max(found.start() - 200, 0) : found.end() + 50])
    project_page = _main(
        client.get(f"/p/{project.slug}/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    )
    assert re.search(r"Files up to 512\sMiB", project_page)  # the unit the 413 names


def test_file_sizes_are_written_in_the_binary_units_the_upload_refusal_names():
    from studies.templatetags.concord import english_filesize

    nbsp = "\u00a0"
    assert english_filesize(512 * 2**20) == f"512{nbsp}MiB"
    assert english_filesize(131_687_408) == f"125.6{nbsp}MiB"
    assert english_filesize(1536) == f"1.5{nbsp}KiB"
    assert english_filesize(3 * 2**40) == f"3{nbsp}TiB"
    assert english_filesize(2**50) == f"1024{nbsp}TiB"
    assert (english_filesize(1), english_filesize(300), english_filesize(None)) == (
        "1 byte",
        "300 bytes",
        "0 bytes",
    )


def test_the_project_and_members_pages_name_status_and_roles_in_english_for_a_german_browser(
    db, researcher
):
    # Found by an outside probe: "… per item · Aktiv" on the English project page, and the
    # members page's roles in German, for a browser asking for German.
    project = helpers.seeded_study(researcher)[0]
    client = Client()
    client.force_login(researcher)
    project_page = _main(
        client.get(f"/p/{project.slug}/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    )
    assert f"· {project.get_status_display()}</p>" in project_page
    assert not re.search(r"\b(Aktiv|Entwurf|Pausiert|Archiviert)\b", project_page)
    members = _main(
        client.get(f"/p/{project.slug}/members/", HTTP_ACCEPT_LANGUAGE="de").content.decode()
    )
    assert "Researcher" in members
    assert not re.search(r"\b(Forschende|Annotierende|Prüfende)\b", members)
    for path in ("settings/", "webhooks/"):
        page = _main(
            client.get(f"/p/{project.slug}/{path}", HTTP_ACCEPT_LANGUAGE="de").content.decode()
        )
        assert not re.search(r"\b(Aktiv|Entwurf|Pausiert|Archiviert|Forschende)\b", page), path
    settings_page = client.get(f"/p/{project.slug}/settings/", HTTP_ACCEPT_LANGUAGE="de")
    assert ">Active<" in settings_page.content.decode()
