"""Webhooks through a real Celery worker process and the real Redis broker, against the test
PostgreSQL database (``transactional_db``: the worker sees only committed rows).

Needs PostgreSQL (DATABASE_URL) and Redis (REDIS_URL): skipped on a bare laptop, required in CI.
"""

import hashlib
import hmac
import json
import uuid

import pytest
from django.conf import settings
from django.db import connection

from config.celery import app as celery_app
from tests import factories
from tests.conftest import client_for, require
from tests.llm_judges.worker import CeleryWorker, database_url, redis_reachable, wait_for
from webhooks import services
from webhooks.models import Delivery

ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}


@pytest.fixture
def queue(transactional_db, settings):
    require(connection.vendor == "postgresql", "needs PostgreSQL (set DATABASE_URL)")
    require(redis_reachable(), "needs Redis (set REDIS_URL)")
    name = f"webhooks-test-{uuid.uuid4().hex[:8]}"
    settings.CONCORD_WEBHOOK_QUEUE = name
    settings.CONCORD_WEBHOOK_PRIVATE_HOSTS = ["127.0.0.1"]
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = False
    yield name
    celery_app.conf.task_always_eager = previous
    import redis

    client = redis.Redis.from_url(settings.REDIS_URL)
    client.delete(name, f"_kombu.binding.{name}", f"_kombu.binding_permanent.{name}")


@pytest.fixture
def worker(queue):
    process = CeleryWorker(
        queue=queue,
        database_url=database_url(connection.settings_dict),
        redis_url=settings.REDIS_URL,
        env={
            "CONCORD_WEBHOOK_QUEUE": queue,
            "CONCORD_WEBHOOK_PRIVATE_HOSTS": "127.0.0.1",
            "CONCORD_WEBHOOK_RETRY_SECONDS": "0.2",
            "CONCORD_WEBHOOK_TIMEOUT": "60",
        },
    )
    process.wait_ready()
    yield process
    process.stop()


@pytest.fixture
def annotated(queue, receiver):
    researcher = factories.UserFactory()
    project = factories.ProjectFactory(annotators_per_item=1)
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    annotator = factories.UserFactory()
    factories.MembershipFactory(project=project, user=annotator, role="annotator")
    factories.make_items(project, 3)
    subscription = services.subscription_create(
        project=project, user=researcher, url=receiver.url, events=["answer.submitted"]
    )
    return project, client_for(annotator), subscription


def submit_one(project, client) -> int:
    assignment = client.post(f"/api/projects/{project.slug}/next/", {}, format="json").json()
    response = client.post(
        f"/api/assignments/{assignment['id']}/submit/",
        {"answer": ANSWER, "time_spent_ms": 1000},
        format="json",
    )
    assert response.status_code == 201, response.content
    return assignment["id"]


def test_a_receiver_that_hangs_never_holds_up_annotation(annotated, receiver, worker):
    """The receiver holds every connection until the test releases it; annotators submit three
    answers meanwhile, each answered while the receiver still holds the first delivery."""
    project, client, _ = annotated
    receiver.mode = "hold"
    for _ in range(3):
        submit_one(project, client)
    wait_for(receiver.arrived.is_set, timeout=60, what="the first delivery", worker=worker)
    # every answer stored and acknowledged while no delivery has had an outcome (a call made in
    # the request would have ended in a timeout, recorded as an error, before it answered)
    assert Delivery.objects.count() == 3
    assert set(Delivery.objects.values_list("status", flat=True)) <= {"pending", "sending"}
    assert set(Delivery.objects.values_list("last_error", flat=True)) == {""}
    receiver.mode = "ok"
    receiver.release()
    wait_for(
        lambda: Delivery.objects.filter(status="delivered").count() == 3,
        timeout=60,
        what="three deliveries",
        worker=worker,
    )


def test_a_failing_receiver_is_retried_with_backoff_until_it_comes_back(
    annotated, receiver, worker
):
    project, client, subscription = annotated
    receiver.fail_status = 503
    receiver.plan = ["fail", "fail"]  # down twice, then back
    submit_one(project, client)
    delivery = wait_for(
        lambda: Delivery.objects.filter(status="delivered").first(),
        timeout=60,
        what="the delivery after two failures",
        worker=worker,
    )
    assert delivery.attempts == 3 and delivery.last_status_code == 204
    assert [r["mode"] for r in receiver.requests] == ["fail", "fail", "ok"]
    ids = {r["headers"]["Concord-Webhook-Id"] for r in receiver.requests}
    assert ids == {str(delivery.event_id)}  # one event, three attempts
    bodies = {r["body"] for r in receiver.requests}
    assert len(bodies) == 1
    for request in receiver.requests:
        headers = request["headers"]
        signed = headers["Concord-Timestamp"].encode() + b"." + request["body"]
        mac = hmac.new(subscription.secret.encode(), signed, hashlib.sha256).hexdigest()
        assert headers["Concord-Signature"] == f"v1={mac}"
    assert json.loads(request["body"])["data"]["answer"]["helpfulness"] == 70
