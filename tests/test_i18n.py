"""Annotator pages in other languages (issue 29, item 5).

- The catalogues: every committed ``.mo`` is what its ``.po`` compiles to (pure Python, no GNU
  gettext: core/catalogs.py), the German ones are complete and keep every placeholder, and every
  task type carries its own.
- The language: the browser's Accept-Language, a crowd link's ``?lang=`` (kept for the visit,
  through the login the link makes) and the member's own setting (``Membership.language``).
- A pseudo-locale (tests/pseudo_locale.py) renders every annotator page served as HTML — the
  annotation page of every task type (its template; the JS it runs is checked in a browser by
  tests/e2e/test_i18n_browser.py), crowd entry, refusal and finish pages, the MTurk HIT page,
  invitation and login pages — and finds no English outside the translated strings, content the
  researchers or the data wrote set aside. Every annotator JS module is scanned for unmarked
  strings (tests/js_strings.py).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser
from urllib.parse import parse_qs, urlparse

import pytest
from django.conf import settings as django_settings
from django.test import Client
from django.utils import translation

from annotation import task_types
from core.catalogs import compile_file, parse_po, po_files
from crowd import services as crowd_services
from projects import members
from projects.models import Membership, welcome_message
from tests import factories
from tests.conftest import REPO
from tests.e2e.pages import demo_project
from tests.js_strings import unmarked_strings
from tests.pseudo_locale import (
    PSEUDO_LANGUAGES,
    PSEUDO_LTR,
    researcher_words,
    unmarked_english,
    write_pseudo_catalogues,
)

SLUGS = sorted(task_types.task_type_registry.keys())
PLACEHOLDER = re.compile(r"%\(\w+\)[sdf]|%[sdf]")


# --- the catalogues --------------------------------------------------------------------------


def test_every_compiled_catalogue_is_up_to_date_with_its_po():
    stale = [
        str(po) for po in po_files(REPO) if po.with_suffix(".mo").read_bytes() != compile_file(po)
    ]
    assert stale == [], "run: python manage.py compile_catalogs"


def test_the_german_catalogues_are_complete_and_keep_every_placeholder():
    problems = []
    for po in po_files(REPO):
        if po.parent.parent.name != "de":
            continue
        for entry in parse_po(po.read_text(encoding="utf-8"), path=str(po))[1:]:
            where = f"{po.relative_to(REPO)}:{entry.line}"
            if not entry.translated:
                problems.append(f"{where}: not translated (or fuzzy): {entry.msgid[:60]!r}")
                continue
            for source, target in (
                (entry.msgid, entry.msgstr[0]),
                (entry.msgid_plural, entry.msgstr.get(1)),
            ):
                if source is not None and sorted(PLACEHOLDER.findall(source)) != sorted(
                    PLACEHOLDER.findall(target or "")
                ):
                    problems.append(f"{where}: placeholders differ: {source[:60]!r}")
    assert problems == []


@pytest.mark.parametrize("slug", SLUGS)
def test_every_task_type_carries_its_own_catalogues(slug):
    folder = REPO / "task_types" / slug / "locale" / "de" / "LC_MESSAGES"
    for domain in ("django", "djangojs"):
        assert (folder / f"{domain}.po").exists(), f"{folder}/{domain}.po"
        assert (folder / f"{domain}.mo").exists(), f"{folder}/{domain}.mo"


def test_the_po_reader_names_the_line_of_a_broken_entry(tmp_path):
    from core.catalogs import PoError

    po = 'msgid ""\nmsgstr ""\n\nmsgid "a"\nmsgstr "b\n'
    with pytest.raises(PoError, match=r":5: "):
        parse_po(po, path="x.po")


# --- choosing the language -------------------------------------------------------------------


def test_the_browser_language_chooses_the_page_language(db):
    page = Client().get("/login/", HTTP_ACCEPT_LANGUAGE="de-DE,de;q=0.9,en;q=0.5")
    assert page.status_code == 200
    assert '<html lang="de" dir="ltr">' in page.content.decode()
    assert "Anmelden" in page.content.decode()
    assert "Accept-Language" in page["Vary"]
    english = Client().get("/login/", HTTP_ACCEPT_LANGUAGE="fr-FR,fr;q=0.9")  # not offered
    assert '<html lang="en"' in english.content.decode() and "Log in" in english.content.decode()


def _prolific_url(project, *, pid="PID1", session="S1", study="STUDY1", lang=""):
    link = crowd_services.entry_link(
        base_url="http://testserver/", project=project, platform="prolific", study=study
    )
    sig = parse_qs(urlparse(link).query)["sig"][0]
    url = f"/crowd/{project.slug}/prolific/?sig={sig}&STUDY_ID={study}&PROLIFIC_PID={pid}&SESSION_ID={session}"
    return url + (f"&lang={lang}" if lang else "")


def test_a_crowd_links_lang_holds_for_the_whole_visit(db):
    project, _, _ = demo_project("stance", items=2)
    project.crowd = {"batch_size": 2, "controls_per_batch": 0}
    project.save(update_fields=["crowd"])
    browser = Client(HTTP_ACCEPT_LANGUAGE="en")
    entered = browser.get(_prolific_url(project, lang="de"))
    assert entered.status_code == 302, entered.content
    page = browser.get(entered["Location"])
    assert '<html lang="de"' in page.content.decode()
    assert "Bisherige Einträge" in page.content.decode()  # "Previous items"
    # The API answers in it too: a refusal an annotator can read.
    refused = browser.post(
        "/api/assignments/999999/flag/", {"reason": ""}, content_type="application/json"
    )
    assert refused.status_code == 404
    item = browser.post(
        f"/api/projects/{project.slug}/next/", content_type="application/json"
    ).json()
    flag = browser.post(
        f"/api/assignments/{item['id']}/flag/", {"reason": ""}, content_type="application/json"
    )
    assert (
        flag.status_code == 400
        and flag.json()["detail"] == "Wählen Sie einen Grund für die Meldung."
    )
    # The JavaScript catalogue, served by Concord (no CDN), in the same language.
    catalogue = browser.get("/jsi18n/").content.decode()
    assert "Bereit zum Abschicken." in catalogue and "Satz %(n)s" in catalogue


def test_a_refused_crowd_link_is_refused_in_its_language(db):
    project, _, _ = demo_project("stance")
    page = Client().get(f"/crowd/{project.slug}/prolific/?sig=forged&STUDY_ID=S&lang=de")
    assert page.status_code == 403
    assert "Wir konnten die Studie nicht öffnen" in page.content.decode()
    assert "Dieser Studienlink ist ungültig." in page.content.decode()


def test_the_password_reset_mail_is_in_the_language_it_was_asked_in(db, mailoutbox):
    factories.UserFactory(email="anna@example.org")
    browser = Client(HTTP_ACCEPT_LANGUAGE="de")
    assert browser.post("/password/reset/", {"email": "anna@example.org"}).status_code == 302
    (mail,) = mailoutbox
    assert mail.subject == "Concord: Passwort zurücksetzen"
    assert "Wählen Sie hier ein neues Passwort:" in mail.body


def test_an_unknown_lang_is_ignored(db):
    page = Client().get("/login/?lang=xx-evil%3Cscript%3E", HTTP_ACCEPT_LANGUAGE="en")
    assert '<html lang="en"' in page.content.decode()


def test_the_members_setting_is_kept_and_chosen_on_their_next_visit(db):
    project, _, annotator = demo_project("stance")
    browser = Client(HTTP_ACCEPT_LANGUAGE="en")
    browser.force_login(annotator)
    assert "Previous items" in browser.get(f"/p/{project.slug}/annotate/").content.decode()
    chosen = browser.post(f"/p/{project.slug}/annotate/language/", {"language": "de"})
    assert chosen.status_code == 302
    assert Membership.objects.get(project=project, user=annotator).language == "de"
    later = Client(HTTP_ACCEPT_LANGUAGE="en")  # another device: a new session
    later.force_login(annotator)
    assert "Bisherige Einträge" in later.get(f"/p/{project.slug}/annotate/").content.decode()
    # …and its API calls after the page follow the setting (kept in the session).
    refused = later.post(f"/p/{project.slug}/annotate/language/", {"language": "tlh"})
    assert refused.status_code == 400
    assert "Wählen Sie eine der angebotenen Sprachen." in refused.content.decode()


def test_the_language_form_is_for_members_of_the_project_only(db):
    project, _, _ = demo_project("stance")
    stranger = factories.UserFactory()
    browser = Client()
    browser.force_login(stranger)
    assert (
        browser.post(f"/p/{project.slug}/annotate/language/", {"language": "de"}).status_code == 404
    )


# --- German words for what Concord itself names ---------------------------------------------


def test_the_home_page_names_task_types_and_roles_in_german(db):
    """Task type names come from each package's catalogue; a role is a whole sentence, never a
    lower-cased label (German nouns keep their capital)."""
    project, _, annotator = demo_project("argument_structure")
    reviewing = factories.ProjectFactory(task_type="questionnaire")
    factories.MembershipFactory(project=reviewing, user=annotator, role="reviewer")
    browser = Client(HTTP_ACCEPT_LANGUAGE="de")
    browser.force_login(annotator)
    page = browser.get("/").content.decode()
    assert "Argumentstruktur · Ihre Rolle: Annotierende" in page
    assert "Fragebogen (Umfragefragen) · Ihre Rolle: Prüfende" in page
    assert "Uneinigkeiten prüfen" in page
    assert "annotierende" not in page and "prüfende" not in page
    english = Client(HTTP_ACCEPT_LANGUAGE="en")
    english.force_login(annotator)
    page = english.get("/").content.decode()
    assert "Argument structure · you are an annotator" in page
    assert "Questionnaire (survey questions) · you are a reviewer" in page


def test_the_welcome_after_an_invitation_keeps_the_role_a_noun():
    with translation.override("de"):
        welcome = welcome_message(role="annotator", username="anna", project="Studie")
    assert welcome == "Willkommen, anna: Ihre Rolle in Studie ist jetzt „Annotierende“."
    english = welcome_message(role="annotator", username="anna", project="Study")
    assert english == "Welcome, anna: you are now an annotator of Study."


def test_the_default_questionnaire_reads_in_german_and_the_researchers_words_as_written():
    task_type = task_types.get("questionnaire")
    default = task_type.validate_config({})
    with translation.override("de"):
        shown = task_type.annotator_config(default)
    prompts = [q["prompt"] for q in shown["questions"]]
    assert prompts == [
        "Welche Antwort beantwortet den Prompt besser?",
        "Wie hilfreich ist Antwort A?",
        "Sonst noch etwas? (optional)",
    ]
    assert shown["questions"][0]["labels"] == [
        "Antwort A ist besser",
        "Gleich gut",
        "Antwort B ist besser",
    ]
    assert shown["questions"][1]["points"][0] == "Überhaupt nicht"
    assert [f["label"] for f in shown["fields"]] == ["Prompt", "Antwort A", "Antwort B"]
    assert default["questions"][0]["prompt"] == "Which response answers the prompt better?"
    # What the researchers wrote or changed is theirs: shown as written.
    own = task_type.validate_config(
        {
            "fields": [{"name": "response_a", "label": "Summary A"}, {"name": "response_b"}],
            "questions": [
                {
                    "id": "preference",
                    "kind": "pairwise",
                    "prompt": "Which summary is better?",
                    "fields": ["response_a", "response_b"],
                },
                {
                    "id": "helpfulness",
                    "kind": "likert",
                    "prompt": "How helpful is Response A?",
                    "points": ["No", "Yes"],
                },
            ],
        }
    )
    with translation.override("de"):
        shown = task_type.annotator_config(own)
    assert shown["questions"][0]["prompt"] == "Which summary is better?"
    assert shown["questions"][0]["labels"] == [
        "Summary A ist besser",
        "Gleich gut",
        "Response b ist besser",
    ]
    assert shown["questions"][1] == {
        **own["questions"][1],
        "prompt": "Wie hilfreich ist Antwort A?",
    }


# --- a pseudo-locale finds every unmarked string ---------------------------------------------


@pytest.fixture
def pseudo_locales(settings, tmp_path):
    settings.LOCALE_PATHS = [write_pseudo_catalogues(tmp_path), *django_settings.LOCALE_PATHS]
    settings.LANGUAGES = [*settings.LANGUAGES, *PSEUDO_LANGUAGES]
    yield
    translation.trans_real._translations = {}


class _Texts(HTMLParser):
    """Text nodes and the attributes people read, outside <script> and <style>."""

    READ = {"aria-label", "placeholder", "title", "alt"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.texts: list[tuple[str, str]] = []
        self.stack: list[str] = []

    def handle_starttag(self, tag, attrs):
        if tag not in ("meta", "link", "input", "br", "img", "hr"):
            self.stack.append(tag)
        for name, value in attrs:
            if value and (
                name in self.READ
                or (name == "value" and dict(attrs).get("type") in ("submit", "button"))
            ):
                self.texts.append((f"<{tag} {name}>", value))

    def handle_endtag(self, tag):
        while self.stack and self.stack.pop() != tag:
            pass

    def handle_data(self, data):
        if data.strip() and not {"script", "style"} & set(self.stack):
            self.texts.append((f"<{self.stack[-1] if self.stack else ''}>", data))


def english_left(html: str, *, allowed: set[str]) -> list[str]:
    """Unmarked English in ``html``; the language form's names of languages are their own."""
    parser = _Texts()
    parser.feed(html)
    own_names = researcher_words([name for _, name in django_settings.LANGUAGES])
    return unmarked_english(parser.texts, allowed=allowed | own_names)


def _project_words(project, *extra) -> set[str]:
    """Words the researchers or the data wrote: name, guidelines, config, items (as stored and
    as annotators are shown them)."""
    from annotation.models import Item

    task_type = task_types.get(project.task_type)
    items = [(i.payload, task_type.display(i)) for i in Item.objects.filter(project=project)]
    # The config as annotators get it: its questions (defaults included) are the researchers'.
    config = task_type.annotator_config(task_type.validate_config(project.config))
    return researcher_words(project.name, project.guidelines, config, items, *extra)


@pytest.mark.parametrize("slug", SLUGS)
def test_the_annotation_page_of_every_task_type_has_no_unmarked_english(db, pseudo_locales, slug):
    project, _, annotator = demo_project(slug, items=1)
    project.crowd = {"allow_skip": True}
    project.save(update_fields=["crowd"])
    browser = Client()
    browser.force_login(annotator)
    page = browser.get(f"/p/{project.slug}/annotate/?lang={PSEUDO_LTR}")
    assert page.status_code == 200
    html = page.content.decode()
    assert f'<html lang="{PSEUDO_LTR}" dir="ltr">' in html
    assert english_left(html, allowed=_project_words(project, annotator.username)) == []


def test_the_crowd_invitation_and_home_pages_have_no_unmarked_english(db, pseudo_locales):
    project, researcher, member = demo_project("stance", items=2)
    project.crowd = {"batch_size": 1, "controls_per_batch": 0}
    project.save(update_fields=["crowd"])
    allowed = _project_words(project)
    lang = f"lang={PSEUDO_LTR}"
    pages = {}
    anonymous = Client()
    pages["refused"] = anonymous.get(f"/crowd/{project.slug}/prolific/?sig=x&STUDY_ID=S&{lang}")
    pages["login"] = anonymous.get(f"/login/?{lang}")
    pages["not found"] = anonymous.get(f"/no-such-page/?{lang}")
    invitation = members.invitation_create(project=project, role="annotator", created_by=researcher)
    token = members.invitation_token(invitation=invitation)
    pages["invitation"] = anonymous.get(f"/invite/{token}/?{lang}")
    pages["invitation errors"] = anonymous.post(
        f"/invite/{token}/?{lang}", {"username": "", "password1": "a", "password2": "b"}
    )
    pages["invitation forged"] = anonymous.get(f"/invite/{token}x/?{lang}")
    pages["password reset"] = anonymous.get(f"/password/reset/?{lang}")
    pages["password reset sent"] = anonymous.get(f"/password/reset/sent/?{lang}")
    pages["password reset link"] = anonymous.get(f"/password/reset/x/y-z/?{lang}")
    pages["password set"] = anonymous.get(f"/password/reset/done/?{lang}")
    link = crowd_services.entry_link(
        base_url="http://testserver/", project=project, platform="mturk", study="HITS"
    )
    query = urlparse(link).query
    pages["hit preview"] = anonymous.get(
        f"/crowd/{project.slug}/mturk/?{query}&assignmentId=ASSIGNMENT_ID_NOT_AVAILABLE&{lang}"
    )
    pages["hit"] = anonymous.get(
        f"/crowd/{project.slug}/mturk/?{query}&assignmentId=A1&hitId=H1&workerId=W1&turkSubmitTo=https://x&{lang}"
    )
    annotator = Client()
    annotator.force_login(member)
    pages["home"] = annotator.get(f"/?{lang}")
    pages["password change"] = annotator.get(f"/password/change/?{lang}")
    pages["password changed"] = annotator.get(f"/password/change/done/?{lang}")
    # A task type's name is its name (as "Concord" is); the top bar shows the account's.
    allowed |= researcher_words([t.name for t in task_types.all_task_types()], member.username)
    worker = Client()
    assert worker.get(_prolific_url(project, lang=PSEUDO_LTR)).status_code == 302
    pages["finish (not done)"] = worker.get(f"/crowd/{project.slug}/finish/", follow=True)
    Membership.objects.filter(project=project, role="annotator").update(
        qualification="disqualified"
    )
    pages["finish (stopped)"] = worker.get(f"/crowd/{project.slug}/finish/")
    found = []
    for name, page in pages.items():
        assert page.status_code in (200, 400, 403, 404, 410), (name, page.status_code)
        html = page.content.decode()
        assert f'lang="{PSEUDO_LTR}"' in html, name
        found += [f"{name}: {line}" for line in english_left(html, allowed=allowed | {"HITS"})]
    assert found == []


# --- the task modules' strings ---------------------------------------------------------------


def _annotator_scripts():
    yield REPO / "static" / "js" / "annotate.js"
    yield REPO / "static" / "js" / "review.js"  # the reviewer's page
    for slug in SLUGS:
        yield from sorted((REPO / "task_types" / slug / "static" / slug).glob("*.js"))


@pytest.mark.parametrize("path", list(_annotator_scripts()), ids=lambda p: str(p.relative_to(REPO)))
def test_every_string_for_people_in_annotator_javascript_is_marked(path):
    assert unmarked_strings(path) == []


def test_the_javascript_scan_finds_an_unmarked_string(tmp_path):
    script = tmp_path / "task.js"
    script.write_text(
        'const a = gettext("Marked string");\n// "Only a comment"\n'
        'el.textContent = "Choose a label first.";\nif (event.key === "Enter") go(".st-row");\n'
    )
    assert unmarked_strings(script) == ['task.js:3: "Choose a label first."']


def test_the_invitation_names_the_role_in_a_whole_sentence(db):
    # Was "Sie sind eingeladen als annotierende ." (the label lower-cased into a sentence).
    project, researcher, _member = demo_project("stance", items=1)
    invitation = members.invitation_create(project=project, role="annotator", created_by=researcher)
    url = f"/invite/{members.invitation_token(invitation=invitation)}/"
    german = Client().get(f"{url}?lang=de").content.decode()
    assert "Sie sind eingeladen: Ihre Rolle ist <strong>Annotierende</strong>." in german
    assert "annotierende" not in german
    assert "Wählen Sie einen Benutzernamen und ein Passwort" in german
    english = Client().get(f"{url}?lang=en").content.decode()
    assert "You are invited as an <strong>annotator</strong>." in english


def test_the_not_found_page_is_in_one_language(db):
    """Found by an outside probe: a German browser's not-found page had a German heading over the
    English refusal of a project it may not see."""
    user = factories.UserFactory()
    browser = Client(HTTP_ACCEPT_LANGUAGE="de")
    browser.force_login(user)
    page = browser.get("/p/no-such-study/").content.decode()
    assert "Nicht gefunden" in page and "Sie sind kein Mitglied dieses Projekts" in page
    assert "You are not a member" not in page
    english = Client(HTTP_ACCEPT_LANGUAGE="en")
    english.force_login(user)
    assert (
        "You are not a member of this project" in english.get("/p/no-such-study/").content.decode()
    )
