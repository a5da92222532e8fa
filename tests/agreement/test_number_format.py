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
