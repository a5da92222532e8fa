"""Admin pages carry the site's favicon, as the site's own pages do."""

import pytest
from django.test import Client

from tests import factories

FAVICON = '<link rel="icon" href="/static/favicon.svg" type="image/svg+xml">'


@pytest.mark.parametrize(
    "url",
    ["/admin/login/", "/admin/", "/admin/projects/project/", "/admin/projects/project/add/"],
)
def test_admin_pages_have_the_favicon(db, url):
    client = Client()
    if url != "/admin/login/":
        client.force_login(factories.UserFactory(is_staff=True, is_superuser=True))
    page = client.get(url)
    assert page.status_code == 200
    assert page.content.decode().count(FAVICON) == 1
