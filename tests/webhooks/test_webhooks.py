"""Webhooks against a real HTTP receiver on 127.0.0.1 (tests/webhooks/receiver.py), Celery eager:
subscriptions and their address rules, signed payloads, the events of an annotation, retries of
a receiver that fails, times out and comes back, the delivery log page and redelivery."""

import hashlib
import hmac
import json

import pytest
from django.urls import reverse

from annotation import services as workflow
from tests import factories
from tests.conftest import client_for
from webhooks import services
from webhooks.models import Delivery, Subscription

ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}


@pytest.fixture(autouse=True)
def _eager(celery_eager):
    """Deliveries run in-process here, even where CI points Celery at Redis (a real worker:
    test_webhooks_worker.py)."""


def expected_signature(secret: str, headers: dict, body: bytes) -> str:
    timestamp = headers["Concord-Timestamp"]
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256)
    return "v1=" + mac.hexdigest()


@pytest.fixture
def subscription(project, researcher, receiver, local_receivers_allowed):
    return services.subscription_create(
        project=project,
        user=researcher,
        url=receiver.url,
        events=["answer.submitted", "item.complete"],
    )


def submit(project, user, capture, answer=ANSWER):
    with capture(execute=True):
        assignment = workflow.assignment_next(project=project, annotator=user)
        workflow.annotation_submit(assignment=assignment, answer=answer)
    return assignment


# --- subscriptions and where they may point -------------------------------------------------


def test_researchers_add_a_webhook_through_the_api(researcher_client, project, receiver, settings):
    settings.CONCORD_WEBHOOK_PRIVATE_HOSTS = ["127.0.0.1"]
    url = f"/api/projects/{project.slug}/webhooks/"
    response = researcher_client.post(
        url, {"url": receiver.url, "events": ["item.complete", "answer.submitted"]}, format="json"
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert body["events"] == ["answer.submitted", "item.complete"]
    assert body["secret"].startswith("whsec_") and len(body["secret"]) > 30
    listing = researcher_client.get(url).json()
    assert [s["id"] for s in listing["results"]] == [body["id"]]
    assert "judge_run.finished" in listing["events"]
    changed = researcher_client.patch(
        f"{url}{body['id']}/", {"is_active": False, "new_secret": True}, format="json"
    ).json()
    assert changed["is_active"] is False and changed["secret"] != body["secret"]
    assert researcher_client.delete(f"{url}{body['id']}/").status_code == 204
    assert not Subscription.objects.exists()


@pytest.mark.parametrize(
    "bad, field",
    [
        ({"url": "http://127.0.0.1:9/x", "events": ["answer.submitted"]}, "url"),
        ({"url": "http://169.254.169.254/latest/meta-data", "events": ["item.complete"]}, "url"),
        ({"url": "http://[::1]/x", "events": ["item.complete"]}, "url"),
        ({"url": "ftp://example.org/x", "events": ["item.complete"]}, "url"),
        ({"url": "http://8.8.8.8/x", "events": ["item.exploded"]}, "events"),
        ({"url": "http://8.8.8.8/x", "events": []}, "events"),
        ({"url": ["http://8.8.8.8/x"], "events": ["item.complete"]}, "url"),
    ],
)
def test_a_bad_webhook_is_a_400_naming_the_field(researcher_client, project, bad, field):
    response = researcher_client.post(f"/api/projects/{project.slug}/webhooks/", bad, format="json")
    assert response.status_code == 400, response.content
    assert response.json()["field"].startswith(field)
    assert not Subscription.objects.exists()


def test_private_addresses_are_refused_unless_staff_listed_the_host(
    researcher_client, project, settings
):
    body = {"url": "http://127.0.0.1:9/x", "events": ["item.complete"]}
    refused = researcher_client.post(f"/api/projects/{project.slug}/webhooks/", body, format="json")
    assert "loopback" in refused.json()["detail"]
    assert "CONCORD_WEBHOOK_PRIVATE_HOSTS" in refused.json()["detail"]
    settings.CONCORD_WEBHOOK_PRIVATE_HOSTS = ["127.0.0.1"]
    allowed = researcher_client.post(f"/api/projects/{project.slug}/webhooks/", body, format="json")
    assert allowed.status_code == 201


def test_webhooks_are_the_projects_researchers_only(project, annotator, subscription):
    outsider = factories.UserFactory()
    other = factories.ProjectFactory()
    factories.MembershipFactory(project=other, user=outsider, role="researcher")
    for user in (annotator, outsider):
        client = client_for(user)
        assert client.get(f"/api/projects/{project.slug}/webhooks/").status_code == 404
        assert (
            client.delete(f"/api/projects/{project.slug}/webhooks/{subscription.pk}/").status_code
            == 404
        )
    # a researcher of another project cannot reach this one's webhook through their own project
    response = client_for(outsider).get(f"/api/projects/{other.slug}/webhooks/{subscription.pk}/")
    assert response.status_code == 404


# --- events, signed ---------------------------------------------------------------------------


def test_an_answer_is_announced_signed_and_the_item_once_complete(
    project, items, annotator, subscription, receiver, django_capture_on_commit_callbacks
):
    second = factories.UserFactory()
    factories.MembershipFactory(project=project, user=second, role="annotator")
    first = submit(project, annotator, django_capture_on_commit_callbacks)
    events = [json.loads(r["body"])["event"] for r in receiver.requests]
    assert events == ["answer.submitted"]  # one of two answers: not complete yet
    submit(project, second, django_capture_on_commit_callbacks)
    payloads = [json.loads(r["body"]) for r in receiver.requests]
    assert [p["event"] for p in payloads] == [
        "answer.submitted",
        "answer.submitted",
        "item.complete",
    ]
    answer = payloads[0]
    assert answer["project"] == project.slug
    assert answer["data"]["item"] == first.item_id
    assert answer["data"]["answer"]["helpfulness"] == 70
    assert answer["data"]["annotator"].startswith("ann-")  # the pseudonym, never the username
    assert annotator.username not in json.dumps(payloads)
    complete = payloads[2]
    assert complete["data"] == {
        "item": first.item_id,
        "item_external_id": first.item.external_id,
        "answers": 2,
    }
    for request, payload in zip(receiver.requests, payloads, strict=True):
        headers = request["headers"]
        assert headers["Concord-Webhook-Id"] == payload["id"]
        assert headers["Concord-Event"] == payload["event"]
        assert headers["Concord-Signature"] == expected_signature(
            subscription.secret, headers, request["body"]
        )
    # the signature covers the timestamp: the same body with another timestamp does not verify
    headers = dict(receiver.requests[0]["headers"])
    headers["Concord-Timestamp"] = str(int(headers["Concord-Timestamp"]) + 600)
    assert receiver.requests[0]["headers"]["Concord-Signature"] != expected_signature(
        subscription.secret, headers, receiver.requests[0]["body"]
    )
    assert set(Delivery.objects.values_list("status", flat=True)) == {"delivered"}


def test_item_complete_is_sent_once_even_when_announced_twice(
    project, items, annotator, subscription, receiver, django_capture_on_commit_callbacks
):
    """Two commits that both see the item complete (a race) record one delivery: the id is
    fixed per item and the log holds one delivery per id and subscription."""
    project.annotators_per_item = 1
    project.save()
    assignment = submit(project, annotator, django_capture_on_commit_callbacks)
    from annotation.services import _announce_submit

    with django_capture_on_commit_callbacks(execute=True):
        _announce_submit(project=project, annotation_id=0, item=assignment.item, version=1)
    sent = [json.loads(r["body"])["event"] for r in receiver.requests]
    assert sent.count("item.complete") == 1


def test_an_event_nobody_subscribed_to_records_nothing(
    project, items, annotator, researcher, receiver, local_receivers_allowed,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    services.subscription_create(
        project=project, user=researcher, url=receiver.url, events=["judge_run.finished"]
    )
    submit(project, annotator, django_capture_on_commit_callbacks)
    assert receiver.requests == [] and not Delivery.objects.exists()


def test_nothing_is_sent_before_the_transaction_commits(
    project, items, annotator, subscription, receiver, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        assignment = workflow.assignment_next(project=project, annotator=annotator)
        workflow.annotation_submit(assignment=assignment, answer=ANSWER)
    assert callbacks and receiver.requests == [] and not Delivery.objects.exists()


def test_an_import_announces_that_it_finished(
    researcher_client, project, researcher, receiver, local_receivers_allowed,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    services.subscription_create(
        project=project, user=researcher, url=receiver.url, events=["import.finished"]
    )
    from django.core.files.uploadedfile import SimpleUploadedFile

    lines = "\n".join(json.dumps(factories.citation_payload(n)) for n in range(3))
    upload = SimpleUploadedFile("items.jsonl", lines.encode())
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(
            f"/api/projects/{project.slug}/import/", {"file": upload, "format": "jsonl"}
        )
    assert response.status_code in (201, 202), response.content  # run on commit
    (request,) = receiver.requests
    payload = json.loads(request["body"])
    assert payload["event"] == "import.finished"
    assert payload["data"]["status"] == "done" and payload["data"]["created"] == 3


# --- receivers that fail, time out, are down and come back ----------------------------------


def test_a_failing_receiver_is_retried_and_its_error_body_is_not_echoed(
    project, items, annotator, subscription, receiver, django_capture_on_commit_callbacks
):
    receiver.mode = "fail"
    submit(project, annotator, django_capture_on_commit_callbacks)
    delivery = Delivery.objects.get()
    assert delivery.status == "retrying" and delivery.attempts == 1
    assert delivery.last_status_code == 500
    error = delivery.last_error
    assert error.startswith("HTTP 500: ")
    assert len(error) <= len("HTTP 500: ") + services.EXCERPT_CHARS
    assert "<" not in error and "\x00" not in error and "\x1b" not in error
    assert "script" not in error
    # it comes back: the next due attempt delivers the same event, signed anew
    receiver.mode = "ok"
    assert services.deliveries_due_send(grace_s=0) == 1
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts, delivery.last_error) == ("delivered", 2, "")
    first, second = receiver.requests
    assert first["body"] == second["body"]
    assert first["headers"]["Concord-Webhook-Id"] == second["headers"]["Concord-Webhook-Id"]


def test_a_receiver_that_does_not_answer_times_out_and_is_retried(
    project, items, annotator, subscription, receiver, settings,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    settings.CONCORD_WEBHOOK_TIMEOUT = 0.3
    receiver.mode = "hold"
    submit(project, annotator, django_capture_on_commit_callbacks)
    receiver.release()
    delivery = Delivery.objects.get()
    assert delivery.status == "retrying"
    assert "timed out" in delivery.last_error and delivery.last_status_code is None
    receiver.mode = "ok"
    services.deliveries_due_send(grace_s=0)
    delivery.refresh_from_db()
    assert delivery.status == "delivered" and delivery.attempts == 2


def test_a_receiver_that_is_down_fails_after_the_last_attempt_and_is_redelivered(
    project, items, annotator, subscription, receiver, researcher_client, settings,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    settings.CONCORD_WEBHOOK_MAX_ATTEMPTS = 3
    receiver.stop()
    submit(project, annotator, django_capture_on_commit_callbacks)
    while services.deliveries_due_send(grace_s=0):
        pass
    delivery = Delivery.objects.get()
    assert (delivery.status, delivery.attempts) == ("failed", 3)
    assert "ConnectError" in delivery.last_error
    log = researcher_client.get(f"/api/projects/{project.slug}/webhooks/deliveries/").json()
    assert [(d["status"], d["attempts"]) for d in log["results"]] == [("failed", 3)]
    receiver.restart()
    with django_capture_on_commit_callbacks(execute=True):
        response = researcher_client.post(
            f"/api/projects/{project.slug}/webhooks/deliveries/{delivery.pk}/redeliver/"
        )
    assert response.status_code == 202
    delivery.refresh_from_db()
    assert (delivery.status, delivery.attempts) == ("delivered", 4)
    assert json.loads(receiver.requests[0]["body"])["id"] == str(delivery.event_id)


def test_the_worker_refuses_a_host_staff_no_longer_allow(
    project, items, annotator, subscription, receiver, settings,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    settings.CONCORD_WEBHOOK_PRIVATE_HOSTS = []
    submit(project, annotator, django_capture_on_commit_callbacks)
    delivery = Delivery.objects.get()
    assert delivery.status == "failed"  # not retried: the address will not become public
    assert "loopback" in delivery.last_error
    assert receiver.requests == []


def test_a_bad_status_filter_is_a_400(researcher_client, project):
    response = researcher_client.get(
        f"/api/projects/{project.slug}/webhooks/deliveries/?status=lost"
    )
    assert response.status_code == 400 and response.json()["field"] == "status"


# --- the page -----------------------------------------------------------------------------------


def test_the_page_adds_webhooks_shows_the_log_and_redelivers(
    project, items, annotator, researcher, receiver, local_receivers_allowed,
    django_capture_on_commit_callbacks,
):  # fmt: skip
    from django.test import Client

    browser = Client()
    browser.force_login(researcher)
    page = reverse("project-webhooks", args=[project.slug])
    assert page in browser.get(reverse("project-detail", args=[project.slug])).content.decode()
    refused = browser.post(page, {"url": "http://10.0.0.1/x", "events": ["item.complete"]})
    assert refused.status_code == 400 and b"private address" in refused.content
    added = browser.post(page, {"url": receiver.url, "events": ["answer.submitted"]})
    assert added.status_code == 302
    receiver.mode = "fail"
    submit(project, annotator, django_capture_on_commit_callbacks)
    shown = browser.get(page).content.decode()
    assert receiver.url in shown and "Waiting to retry" in shown and "HTTP 500" in shown
    assert "hunter2</body>" not in shown and "<script>alert" not in shown
    delivery = Delivery.objects.get()
    receiver.mode = "ok"
    with django_capture_on_commit_callbacks(execute=True):
        browser.post(reverse("project-webhook-redeliver", args=[project.slug, delivery.pk]))
    delivery.refresh_from_db()
    assert delivery.status == "delivered"
    annotator_browser = Client()
    annotator_browser.force_login(annotator)
    assert annotator_browser.get(page).status_code == 404


def test_a_project_without_webhooks_pays_one_query_per_submit_after_the_commit(
    project, items, annotator, django_capture_on_commit_callbacks
):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with django_capture_on_commit_callbacks() as callbacks:
        assignment = workflow.assignment_next(project=project, annotator=annotator)
        workflow.annotation_submit(assignment=assignment, answer=ANSWER)
    assert len(callbacks) == 1  # answer.submitted and item.complete, announced together
    with CaptureQueriesContext(connection) as queries:
        for callback in callbacks:
            callback()
    assert len(queries) == 1  # the subscription lookup; nothing else, nothing sent
    assert not Delivery.objects.exists()
