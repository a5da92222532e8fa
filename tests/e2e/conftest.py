"""Browser helpers; the ``browser`` and ``page`` fixtures live in tests/conftest.py so that every
folder shares one Playwright instance (a second sync_playwright in one process fails)."""


def login(page, live_server, username, password):
    page.goto(f"{live_server.url}/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{live_server.url}/")
