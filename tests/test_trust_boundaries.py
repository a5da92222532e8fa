"""A malicious researcher and a crafted bundle against the trust boundaries (issue 24).

The researcher has a project of their own, its study file and the API. They cannot change,
re-point or run a judge another project uses, nor make the worker call an address that is not a
staff-approved model endpoint; a bundle loaded by staff grants nothing and exfiltrates nothing.
A local receiver (the attacker's own OpenAI-compatible server) asserts it got no request.
"""

from __future__ import annotations

import hashlib
import json
import socket

import pytest
from django.core.management import CommandError, call_command

from core import destinations
from llm_judges import services
from llm_judges.models import Judge, JudgeResult, ModelEndpoint
from projects.models import Membership
from studies.study_files import read_study_file, study_export
from tests import factories
from tests.conftest import client_for
from tests.llm_judges.conftest import API_KEY, API_KEY_ENV, make_llm_judge, start
from tests.llm_judges.stub_llm import StubLLM


@pytest.fixture
def receiver():
    """The attacker's server: every request it gets is recorded."""
    with StubLLM() as server:
        yield server


@pytest.fixture
def victim_stub():
    with StubLLM() as server:
        yield server


@pytest.fixture
def victim(db, victim_stub):
    """Another team's project with a keyed LLM judge and a copy of the catalogue's MiniLM."""
    project = factories.ProjectFactory(slug=factories.unique("victim"))
    factories.make_items(project, 3)
    keyed = make_llm_judge(victim_stub, project, name="keyed-gpt")
    minilm = services.judge_copy(
        judge=Judge.objects.get(project=None, name="minilm-similarity"), project=project
    )
    return project, keyed, minilm


@pytest.fixture
def attacker(db):
    user = factories.UserFactory(username=factories.unique("mallory"), is_staff=False)
    project = factories.ProjectFactory(slug=factories.unique("mallory-study"))
    factories.MembershipFactory(project=project, user=user, role="researcher")
    factories.make_items(project, 2)
    return user, project


def snapshot(judge: Judge) -> dict:
    judge.refresh_from_db()
    return {
        "project": judge.project_id,
        "kind": judge.kind,
        "model": judge.model,
        "endpoint": judge.endpoint_id,
        "parameters": judge.parameters,
        "description": judge.description,
    }


def put_study(user, project, judges):
    study = {**study_export(project=project), "judges": judges}
    return client_for(user).put(f"/api/projects/{project.slug}/", study, format="json")


def test_a_study_file_never_reaches_another_projects_judge(victim, attacker, receiver):
    project, keyed, minilm = victim
    user, own = attacker
    before = {judge.pk: snapshot(judge) for judge in (keyed, minilm)}
    # The two steps of the finding: "link" the built-in judge with its exact settings, then
    # re-point it at the attacker's server. Both only ever touch the attacker's own project.
    entry = {
        "name": "minilm-similarity",
        "kind": "embedding",
        "model": "all-MiniLM-L6-v2",
        "parameters": {"items_per_task": 200, "threshold": 0.6, "batch_size": 64},
    }
    assert put_study(user, own, [entry]).status_code == 200
    retarget = {"name": "minilm-similarity", "kind": "llm", "model": "x", "base_url": receiver.url}
    response = put_study(user, own, [retarget])
    assert response.status_code == 400
    assert "endpoint" in response.json()["detail"] and "never names a server" in str(
        response.json()
    )
    response = put_study(
        user, own, [{"name": "keyed-gpt", "kind": "llm", "model": "x", "endpoint": "anything"}]
    )
    assert response.status_code == 400
    assert {judge.pk: snapshot(judge) for judge in (keyed, minilm)} == before
    # The attacker's judge is their own copy; the victim's are untouched and theirs alone.
    assert Judge.objects.get(project=own, name="minilm-similarity").pk not in before
    assert Judge.objects.filter(project=project).count() == 2


def test_a_study_file_cannot_name_a_url_a_key_or_another_projects_endpoint(victim, attacker):
    project, keyed, _ = victim
    user, own = attacker
    endpoint = keyed.endpoint  # open to the victim's project only
    cases = [
        ({"name": "j", "kind": "llm", "model": "m", "base_url": "http://evil/v1"}, "base_url"),
        (
            {
                "name": "j",
                "kind": "llm",
                "model": "m",
                "endpoint": endpoint.name,
                "parameters": {"api_key_env": "OPENAI_API_KEY"},
            },
            "api_key_env",
        ),
        ({"name": "j", "kind": "llm", "model": "m", "endpoint": endpoint.name}, "endpoint"),
    ]
    for entry, field in cases:
        response = put_study(user, own, [entry])
        assert response.status_code == 400, entry
        body = response.json()
        assert field in body["field"], body
        # Endpoints the project may not use are never named to it.
        assert endpoint.name not in body["detail"].split("available:")[-1], body
    assert not Judge.objects.filter(project=own, name="j").exists()


def test_the_api_runs_only_the_projects_own_judges(victim, attacker, victim_stub):
    _, keyed, _ = victim
    user, own = attacker
    client = client_for(user)
    for path in ("judge-runs/", "judge-runs/estimate/"):
        response = client.post(f"/api/projects/{own.slug}/{path}", {"judge": keyed.name})
        assert response.status_code == 400 and response.json()["field"] == "judge", path
    with pytest.raises(services.JudgeError, match="not a judge of this project"):
        services.judge_run_start(judge=keyed, project=own, enqueue=False)
    assert victim_stub.requests == []


def test_the_judges_page_offers_only_the_catalogue_and_the_users_own_projects(victim, attacker):
    from llm_judges.selectors import judges_to_copy

    _, keyed, minilm = victim
    user, own = attacker
    offered = judges_to_copy(project=own, user=user)
    assert keyed not in offered and minilm not in offered
    assert [(j.project, j.name) for j in offered] == [(None, "minilm-similarity")]
    from django.test import Client

    client = Client()
    client.force_login(user)
    page = client.get(f"/p/{own.slug}/judges/").content.decode()
    assert keyed.name not in page and keyed.endpoint.name not in page
    response = client.post(
        f"/p/{own.slug}/judges/",
        {"action": "copy", "copy-source": keyed.pk, "copy-name": "stolen"},
    )
    assert response.status_code == 200 and "Select a valid choice" in response.content.decode()
    assert not Judge.objects.filter(project=own, name="stolen").exists()


def test_nothing_of_another_project_the_user_researches_is_offered_or_usable(victim, attacker):
    """Issue 27, item 5: the judges page offered the judges of the user's other projects (every
    project's, to a superuser); only the catalogue is offered now, and a posted id of another
    project's judge copies nothing."""
    from django.test import Client

    from llm_judges.selectors import judges_to_copy

    project, keyed, minilm = victim
    user, own = attacker
    factories.MembershipFactory(project=project, user=user, role="researcher")  # both projects
    superuser = factories.UserFactory(username=factories.unique("root"), is_superuser=True)
    for viewer in (user, superuser):
        offered = judges_to_copy(project=own, user=viewer)
        assert [(j.project, j.name) for j in offered] == [(None, "minilm-similarity")]
        client = Client()
        client.force_login(viewer)
        page = client.get(f"/p/{own.slug}/judges/").content.decode()
        assert f"{project.name}: {minilm.name}" not in page and keyed.name not in page
        for source in (keyed, minilm):
            response = client.post(
                f"/p/{own.slug}/judges/",
                {"action": "copy", "copy-source": source.pk, "copy-name": "taken"},
            )
            assert "Select a valid choice" in response.content.decode()
    with pytest.raises(services.JudgeError, match="another project's judge") as refused:
        services.judge_copy(judge=keyed, project=own)
    assert refused.value.field == "judge"
    assert not Judge.objects.filter(project=own).exists()


def test_changing_a_copy_never_changes_its_source(victim, attacker):
    project, _, minilm = victim
    user, own = attacker
    copy = services.judge_copy(
        judge=Judge.objects.get(project=None, name="minilm-similarity"), project=own
    )
    copy.parameters = {**copy.parameters, "threshold": 0.1}
    copy.save()
    minilm.refresh_from_db()
    catalogue = Judge.objects.get(project=None, name="minilm-similarity")
    assert minilm.parameters["threshold"] == catalogue.parameters["threshold"] == 0.6


def test_an_endpoint_may_not_reach_private_addresses_unless_staff_allow_it(
    attacker, receiver, celery_eager
):
    _, own = attacker
    endpoint = ModelEndpoint.objects.create(name="looks-public", base_url=receiver.url)
    endpoint.projects.add(own)
    judge = services.judge_create(
        project=own, name="j", kind="llm", model="m", endpoint=endpoint, parameters={}
    )
    started = services.judge_run_start_pending(judge=judge, project=own, enqueue=False)
    run = started.run
    from llm_judges.services.batch_engine import judge_batch_process

    judge_batch_process(run_id=run.pk, item_ids=started.pending_item_ids)
    run.refresh_from_db()
    assert run.status == "failed"
    assert "127.0.0.1" in run.error and "loopback" in run.error
    assert receiver.requests == []


@pytest.mark.parametrize(
    "address",
    [
        "127.0.0.1",
        "10.1.2.3",
        "172.16.0.1",
        "192.168.1.1",
        "169.254.169.254",
        "100.64.0.1",
        "0.0.0.0",
        "::1",
        "fe80::1",
        "fd00::1",
        "::ffff:127.0.0.1",
        "224.0.0.1",
    ],
)
def test_private_loopback_link_local_and_reserved_addresses_are_refused(address):
    assert destinations.address_refusal(address) != ""


@pytest.mark.parametrize("address", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111"])
def test_public_addresses_are_allowed(address):
    assert destinations.address_refusal(address) == ""


def test_a_name_that_resolves_elsewhere_at_connection_time_is_refused(monkeypatch):
    """DNS rebinding: the name was public when checked, private when connecting."""
    answers = iter(["93.184.215.14", "127.0.0.1"])

    def getaddrinfo(host, port, *args, **kwargs):
        return [(socket.AF_INET, socket.SOCK_STREAM, 6, "", (next(answers), port))]

    monkeypatch.setattr(destinations.socket, "getaddrinfo", getaddrinfo)
    destinations.url_check("http://rebind.example/v1", allow_private=False)
    backend = destinations.CheckedNetworkBackend(allow_private=False)
    import httpcore

    with pytest.raises(httpcore.ConnectError, match="loopback"):
        backend.connect_tcp("rebind.example", 80, timeout=1)


# --- bundles ------------------------------------------------------------------------------


@pytest.fixture
def bundle(tmp_path, db):
    project = factories.ProjectFactory(slug=factories.unique("bundled"))
    items = factories.make_items(project, 3)
    annotator = factories.UserFactory(username=factories.unique("ann"))
    member = factories.MembershipFactory(project=project, user=annotator, role="annotator")
    from django.utils import timezone

    from annotation.models import Annotation, Assignment

    now = timezone.now()
    for n, item in enumerate(items):
        assignment = Assignment.objects.create(
            project=project,
            item=item,
            annotator=annotator,
            state="submitted",
            sequence=n + 1,
            reserved_at=now,
            expires_at=now,
            submitted_at=now,
        )
        Annotation.objects.create(
            assignment=assignment,
            item=item,
            annotator=annotator,
            answer={"sentences": [0], "none": False, "helpfulness": 50},
        )
    out = tmp_path / "bundle"
    call_command("bundle", project.slug, str(out))
    slug, pseudonym = project.slug, member.pseudonym
    project.delete()
    return out, slug, pseudonym


def rewrite(directory, name, change):
    """Change one file of a bundle and re-sign the manifest (as an attacker can)."""
    path = directory / name
    if name.endswith(".jsonl"):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line]
        rows = change(rows)
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    else:
        path.write_text(json.dumps(change(json.loads(path.read_text()))))
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["files"][name]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    if name.endswith(".jsonl"):
        manifest["files"][name]["rows"] = len(rows)
    (directory / "manifest.json").write_text(json.dumps(manifest))


def test_a_bundle_grants_no_role_and_creates_no_endpoint_or_keyed_judge(bundle, receiver):
    directory, slug, _ = bundle
    carol = factories.UserFactory(username="carol")
    endpoints = ModelEndpoint.objects.count()

    def crafted(study):
        study["members"] = [{"username": "carol", "role": "researcher"}]
        study["judges"] = [
            {
                "name": "exfil",
                "kind": "llm",
                "model": "m",
                "parameters": {"api_key_env": "OPENAI_API_KEY"},
            }
        ]
        return study

    rewrite(directory, "study.json", crafted)
    with pytest.raises(CommandError, match="api_key_env"):
        call_command("bundle_load", str(directory))
    assert not Membership.objects.filter(user=carol).exists()

    rewrite(
        directory, "study.json", lambda s: {**s, "judges": [{**s["judges"][0], "parameters": {}}]}
    )
    call_command("bundle_load", str(directory))
    assert not Membership.objects.filter(user=carol).exists()  # members are ignored
    judge = Judge.objects.get(project__slug=slug, name="exfil")
    assert judge.endpoint is None and ModelEndpoint.objects.count() == endpoints
    with pytest.raises(services.JudgeError, match="no model endpoint"):
        services.judge_run_start(judge=judge, project=judge.project, enqueue=False)
    assert receiver.requests == []


def test_a_bundle_never_adds_answers_to_an_existing_account(bundle):
    directory, slug, pseudonym = bundle
    existing = factories.UserFactory(username=f"{slug}-{pseudonym}")
    with pytest.raises(CommandError, match="exists here already") as refused:
        call_command("bundle_load", str(directory))
    assert "Nothing was loaded" in str(refused.value)
    from annotation.models import Annotation
    from projects.models import Project

    assert not Annotation.objects.filter(annotator=existing).exists()
    assert not Project.objects.filter(slug=slug).exists()


@pytest.mark.parametrize(
    ("name", "change", "message"),
    [
        ("items.jsonl", lambda rows: [{**rows[0], "payload": "a string"}, *rows[1:]], "line 1"),
        ("items.jsonl", lambda rows: [{**rows[0], "kind": "evil"}, *rows[1:]], "kind"),
        (
            "annotations.jsonl",
            lambda rows: [{**rows[0], "time_spent_ms": "9" * 5000}],
            "time_spent_ms",
        ),
        ("annotations.jsonl", lambda rows: [{**rows[0], "version": 10**30}], "version"),
        ("annotations.jsonl", lambda rows: [{**rows[0], "item": "nope"}], "not in items"),
        # Found by the outside probe: values an import or a submit would refuse.
        ("annotations.jsonl", lambda rows: [{**rows[0], "answer": {"label": "banana"}}], "answer"),
        (
            "items.jsonl",
            lambda rows: [{**rows[0], "gold": {"sentences": [99]}}, *rows[1:]],
            "gold is not what the item's payload gives",
        ),
        # Found by the outside probe of issue 30: a version no settings_versions row records,
        # an item revision later than the item's, an exclusion that is not true or false.
        (
            "annotations.jsonl",
            lambda rows: [{**rows[0], "settings_version": 999}],
            "settings_version 999 is not a version",
        ),
        ("annotations.jsonl", lambda rows: [{**rows[0], "item_revision": 7}], "item_revision 7"),
        ("items.jsonl", lambda rows: [{**rows[0], "excluded": "yes"}, *rows[1:]], "excluded"),
    ],
)
def test_a_crafted_bundle_is_refused_naming_file_line_and_field(bundle, name, change, message):
    from projects.models import Project

    directory, slug, _ = bundle
    rewrite(directory, name, change)
    with pytest.raises(CommandError, match=message) as refused:
        call_command("bundle_load", str(directory))
    assert name in str(refused.value) and "Nothing was loaded" in str(refused.value)
    assert not Project.objects.filter(slug=slug).exists()


def test_a_bundle_with_a_5000_digit_number_is_refused_naming_its_line(bundle):
    directory, _, _ = bundle
    path = directory / "annotations.jsonl"
    first, *rest = path.read_text().splitlines()
    path.write_text(first.replace('"version": 1', '"version": ' + "9" * 5000) + "\n")
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["files"]["annotations.jsonl"]["sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    manifest["files"]["annotations.jsonl"]["rows"] = 1
    (directory / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CommandError, match="annotations.jsonl line 1"):
        call_command("bundle_load", str(directory))


def test_a_bundle_loads_back_only_under_pseudonyms_not_in_use(bundle):
    """Pseudonyms are unique across the instance: a second load (another slug) is refused
    naming the pseudonym, not with a database error."""
    directory, slug, pseudonym = bundle
    call_command("bundle_load", str(directory))
    rewrite(directory, "study.json", lambda study: {**study, "slug": f"{slug}-again"})
    with pytest.raises(CommandError, match=f"pseudonym {pseudonym!r} is in use"):
        call_command("bundle_load", str(directory))


def test_a_manifest_naming_a_file_outside_the_bundle_is_refused(bundle):
    directory, _, _ = bundle
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["files"]["../../etc/passwd"] = {"sha256": "0" * 64}
    (directory / "manifest.json").write_text(json.dumps(manifest))
    with pytest.raises(CommandError, match="not a file of the bundle's folder"):
        call_command("bundle_load", str(directory))


def test_a_bundle_whose_file_does_not_match_its_manifest_is_refused(bundle):
    directory, slug, _ = bundle
    path = directory / "items.jsonl"
    path.write_text(path.read_text().replace("claim", "clam", 1))
    with pytest.raises(CommandError, match="sha256"):
        call_command("bundle_load", str(directory))


def _resign(directory, name, *, rows=None):
    """Re-sign one file's sha256 in the manifest (as an attacker can), its rows left as they
    were unless given."""
    manifest = json.loads((directory / "manifest.json").read_text())
    manifest["files"][name]["sha256"] = hashlib.sha256((directory / name).read_bytes()).hexdigest()
    if rows is not None:
        manifest["files"][name]["rows"] = rows
    (directory / "manifest.json").write_text(json.dumps(manifest))


@pytest.mark.parametrize("name", ["README.md", "items.parquet", "agreement.json"])
def test_every_listed_file_is_checked_not_only_those_loaded(bundle, name):
    """Found by the outside probe: a file the loader does not read (the card, a Parquet twin,
    the report) changed after the bundle was written loaded as if it were the bundle's."""
    from projects.models import Project

    directory, slug, _ = bundle
    with (directory / name).open("ab") as changed:
        changed.write(b" ")
    with pytest.raises(CommandError, match=f"{name} does not match its sha256"):
        call_command("bundle_load", str(directory))
    assert not Project.objects.filter(slug=slug).exists()


def test_a_table_with_other_rows_than_its_manifest_says_is_refused(bundle):
    """Emptied answers re-signed but with the manifest's row count left: refused, not loaded as
    a project without answers."""
    directory, _, _ = bundle
    (directory / "annotations.jsonl").write_text("")
    _resign(directory, "annotations.jsonl")
    with pytest.raises(CommandError, match="annotations.jsonl has 0 lines; manifest.json says 3"):
        call_command("bundle_load", str(directory))


def test_a_link_in_a_bundle_is_refused_even_to_a_file_with_the_right_content(bundle, tmp_path):
    directory, _, _ = bundle
    elsewhere = tmp_path / "elsewhere.jsonl"
    elsewhere.write_bytes((directory / "items.jsonl").read_bytes())
    (directory / "items.jsonl").unlink()
    (directory / "items.jsonl").symlink_to(elsewhere)
    with pytest.raises(CommandError, match="items.jsonl is a link"):
        call_command("bundle_load", str(directory))


def test_a_bundle_line_longer_than_a_record_may_be_is_refused_naming_it(bundle, settings):
    directory, _, _ = bundle
    settings.CONCORD_MAX_RECORD_CHARS = 2000
    rewrite(directory, "items.jsonl", lambda rows: [rows[0], {**rows[1], "pad": "x" * 3000}])
    with pytest.raises(CommandError, match="items.jsonl line 2: longer than 2,000 characters"):
        call_command("bundle_load", str(directory))


def test_a_bundle_keeps_when_each_answer_was_made(bundle):
    """Found by the outside probe: answers loaded with the load's time as theirs (the export's
    submitted_at, a second bundle's created_at). They keep the bundle's."""
    from annotation.models import Annotation

    directory, slug, _ = bundle
    made = ["2024-05-01T12:00:00+00:00", "2024-05-02T08:30:00+00:00", "2024-05-03T17:45:10+00:00"]
    rewrite(
        directory,
        "annotations.jsonl",
        lambda rows: [
            {**row, "created_at": when, "reserved_at": "2024-05-01T11:59:00+00:00"}
            for row, when in zip(rows, made, strict=True)
        ],
    )
    from annotation import services

    other = factories.ProjectFactory(slug=factories.unique("other"))  # its answers stay as made
    factories.make_items(other, 1)
    annotator = factories.UserFactory(username=factories.unique("ann"))
    factories.MembershipFactory(project=other, user=annotator, role="annotator")
    assignment = services.assignment_next(project=other, annotator=annotator)
    answer = {"sentences": [0], "none": False, "helpfulness": 50}
    services.annotation_submit(assignment=assignment, answer=answer)
    others = dict(Annotation.objects.values_list("pk", "created_at"))
    assert others
    call_command("bundle_load", str(directory))
    assert dict(Annotation.objects.filter(pk__in=others).values_list("pk", "created_at")) == others
    loaded = Annotation.objects.filter(item__project__slug=slug).select_related("assignment")
    assert sorted(a.created_at.isoformat() for a in loaded) == made
    assert {a.assignment.submitted_at for a in loaded} == {a.created_at for a in loaded}
    assert {a.assignment.reserved_at.isoformat() for a in loaded} == {"2024-05-01T11:59:00+00:00"}


@pytest.mark.parametrize("when", ["99999-12-31T23:59:59+00:00", "0001-01-01T00:00:00+00:00"])
def test_a_bundle_answer_made_at_an_impossible_time_is_refused(bundle, when):
    directory, _, _ = bundle
    rewrite(directory, "annotations.jsonl", lambda rows: [{**rows[0], "created_at": when}])
    with pytest.raises(CommandError, match="annotations.jsonl line 1: created_at must be"):
        call_command("bundle_load", str(directory))


# --- study files from disk ----------------------------------------------------------------


def test_guidelines_file_reads_only_below_the_study_files_folder(tmp_path):
    secret = tmp_path / "env.sh"
    secret.write_text("DJANGO_SECRET_KEY=hunter2\n")
    folder = tmp_path / "study"
    folder.mkdir()
    (folder / "study.json").write_text(json.dumps({"guidelines_file": "../env.sh"}))
    from core.errors import Refusal

    with pytest.raises(Refusal, match="outside the study file's folder"):
        read_study_file(folder / "study.json")
    with pytest.raises(CommandError, match="outside the study file's folder"):
        call_command("study", "apply", str(folder / "study.json"), "--dry-run")
    (folder / "link.md").symlink_to(secret)
    (folder / "study.json").write_text(json.dumps({"guidelines_file": "link.md"}))
    with pytest.raises(Refusal, match="outside the study file's folder"):
        read_study_file(folder / "study.json")
    (folder / "guide.md").write_text("# Read me\n")
    (folder / "study.json").write_text(json.dumps({"guidelines_file": "guide.md"}))
    assert read_study_file(folder / "study.json")["guidelines"] == "# Read me\n"


def test_a_yaml_alias_bomb_is_refused_before_it_expands(tmp_path):
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for n in range(1, 9):
        refs = ",".join([f"*a{n - 1}"] * 9)
        lines.append(f"a{n}: &a{n} [{refs}]")
    path = tmp_path / "bomb.yaml"
    path.write_text("\n".join(lines) + "\n")
    from core.errors import Refusal

    with pytest.raises(Refusal, match="aliases"):
        read_study_file(path)
    with pytest.raises(CommandError, match="aliases"):
        call_command("study", "apply", str(path), "--dry-run")
    prompt = tmp_path / "prompt.yaml"
    prompt.write_text(path.read_text())
    with pytest.raises(CommandError, match="aliases"):
        call_command("load_prompt", str(prompt))


def test_editing_a_prompt_template_moves_only_the_editors_projects_judges(victim, attacker):
    from llm_judges.services.prompt_templates import prompt_template_revise, shipped_template
    from projects.selectors import researched_projects

    project, keyed, _ = victim
    user, own = attacker
    template = shipped_template(task_type=own.task_type)
    for judge in (keyed,):
        judge.prompt = template
        judge.save()
    mine = make_llm_judge_for(own, template)
    new, what = prompt_template_revise(
        template=template,
        changes={"template": template.template + "\nBe brief."},
        projects=researched_projects(user=user),
    )
    assert what == "new version"
    keyed.refresh_from_db()
    mine.refresh_from_db()
    assert keyed.prompt_id == template.pk and mine.prompt_id == new.pk


def make_llm_judge_for(project, template):
    endpoint = ModelEndpoint.objects.create(
        name=f"e-{project.slug}", base_url="https://x.example/v1"
    )
    endpoint.projects.add(project)
    return services.judge_create(
        project=project,
        name="mine",
        kind="llm",
        model="m",
        endpoint=endpoint,
        parameters={},
        prompt=template,
    )


def test_a_keyed_endpoints_key_goes_only_to_its_own_url(
    victim, victim_stub, receiver, monkeypatch, celery_eager, django_capture_on_commit_callbacks
):
    """The victim's run sends the key to the victim's endpoint; the attacker's server sees none."""
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    project, keyed, _ = victim
    run = start(keyed, project, django_capture_on_commit_callbacks)
    assert run.status == "done"
    assert victim_stub.requests and all(
        r["headers"].get("authorization") == f"Bearer {API_KEY}" for r in victim_stub.requests
    )
    assert receiver.requests == []
    assert JudgeResult.objects.filter(judge=keyed).count() == 3
    assert API_KEY_ENV == keyed.endpoint.api_key_env


@pytest.mark.parametrize(
    ("name", "text", "message"),
    [
        (
            "big.yaml",
            "slug: s\nannotators_per_item: " + "9" * 5000 + "\n",
            "a number cannot be read",
        ),
        (
            "big.json",
            '{"slug": "s", "annotators_per_item": ' + "9" * 5000 + "}",
            "annotators_per_item",
        ),
        ("deep.json", '{"config": ' + "[" * 5000 + "]" * 5000 + "}", "nested"),
        ("twice.yaml", "slug: s\nannotators_per_item: 3\nannotators_per_item: 1\n", "given twice"),
        ("alias.yaml", "slug: &s s\nname: *s\n", "aliases"),
    ],
)
def test_a_crafted_study_file_is_refused_with_a_message_not_a_traceback(
    tmp_path, db, name, text, message
):
    """Found by the outside probe: these gave ValueError / RecursionError tracebacks, or (a key
    given twice) applied the last value without a word."""
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(CommandError, match=message) as refused:
        call_command("study", "apply", str(path), "--dry-run")
    assert "sys.set_int_max_str_digits" not in str(refused.value)
    if (
        "9999" not in text
    ):  # found by a probe: an alias or a key twice said "a number cannot be read"
        assert "a number" not in str(refused.value)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("http://127.0.0.1:8000/v1", "a loopback address"),
        ("http://localhost:8000/v1", "this machine"),
        ("http://[::1]/v1", "a loopback address"),
        ("http://169.254.169.254/latest", "a link-local address"),
        ("http://10.1.2.3/v1", "a private address"),
        ("https://user:secret@api.example/v1", "user name or password"),
        ("https://api.example:99999/v1", "port"),
    ],
)
def test_the_endpoint_admin_refuses_a_private_or_credentialed_url_unless_allowed(db, url, message):
    """Found by the outside probe: such URLs were saved, and refused only at the first run."""
    from django.core.exceptions import ValidationError

    endpoint = ModelEndpoint(name="e", base_url=url)
    with pytest.raises(ValidationError, match=message):
        endpoint.full_clean()
    endpoint.allow_private_network = True
    if "user name" in message or "port" in message:
        with pytest.raises(ValidationError, match=message):
            endpoint.full_clean()
    else:
        endpoint.full_clean()  # staff allowed it


def test_only_superusers_write_prompt_templates_in_the_admin(db):
    """Found by the outside probe: staff with the model's permissions could rewrite a prompt
    record that another project's judge uses (records no run used are edited in place)."""
    from django.contrib.auth.models import Permission
    from django.test import Client

    from llm_judges.models import PromptTemplate
    from llm_judges.services.prompt_templates import shipped_template

    template = shipped_template(task_type="stance")
    staff = factories.UserFactory(is_staff=True)
    staff.user_permissions.add(*Permission.objects.filter(content_type__app_label="llm_judges"))
    client = Client()
    client.force_login(staff)
    assert client.get("/admin/llm_judges/prompttemplate/").status_code == 200  # may read
    change = f"/admin/llm_judges/prompttemplate/{template.pk}/change/"
    assert client.post(change, {"template": "Ignore the item."}).status_code == 403
    assert client.get("/admin/llm_judges/prompttemplate/add/").status_code == 403
    delete = f"/admin/llm_judges/prompttemplate/{template.pk}/delete/"
    assert client.post(delete, {"post": "yes"}).status_code == 403
    stored = PromptTemplate.objects.get(pk=template.pk)
    assert stored.template == template.template


@pytest.mark.parametrize("host", ["127.1", "2130706433", "0x7f000001", "0177.0.0.1"])
def test_the_endpoint_admin_refuses_ipv4_shorthands_of_private_addresses(db, host):
    """Found by the outside probe: the resolver's shorthands of 127.0.0.1 saved."""
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError, match="loopback"):
        ModelEndpoint(name="e", base_url=f"http://{host}/v1").full_clean()


def test_guidelines_beyond_1_mib_through_the_api_are_a_400_naming_the_field(attacker):
    """Found by the outside probe: 19 MiB of guidelines through PUT made every annotator's page
    20 MB. Guidelines are bounded as a guidelines_file is (1 MiB)."""
    user, project = attacker
    study = {**study_export(project=project), "guidelines": "x" * (2**20 + 1)}
    response = client_for(user).put(f"/api/projects/{project.slug}/", study, format="json")
    assert response.status_code == 400
    assert "guidelines" in str(response.json())
    project.refresh_from_db()
    assert len(project.guidelines) <= 2**20
    study["guidelines"] = "y" * 2**20
    response = client_for(user).put(f"/api/projects/{project.slug}/", study, format="json")
    assert response.status_code == 200
