"""The annotator path's requests (next + submit, with an API token as the benchmarks send them)
cost a fixed number of queries, whatever the annotator's history or the tokens they hold, and a
submit takes the project's counter row as late as it can (issue 31: throughput under many
annotators; bench/vs_label_studio.py measures it)."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.utils import timezone
from knox.models import AuthToken
from rest_framework.test import APIClient

from annotation.models import Draft
from projects.models import Membership
from tests import factories

ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}


def token_client(user, *, tokens: int = 1) -> APIClient:
    for _ in range(tokens - 1):
        AuthToken.objects.create(user)
    _, key = AuthToken.objects.create(user)
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {key}")
    return client


def cycle(client, project) -> tuple[list[str], list[str]]:
    """One next + submit: the SQL of each request."""
    with CaptureQueriesContext(connection) as dealt:
        response = client.post(f"/api/projects/{project.slug}/next/", {}, format="json")
    assert response.status_code == 200, response.content
    assignment = response.data["id"]
    Draft.objects.create(assignment_id=assignment, answer=ANSWER, revision=1)
    with CaptureQueriesContext(connection) as submitted:
        response = client.post(
            f"/api/assignments/{assignment}/submit/", {"answer": ANSWER}, format="json"
        )
    assert response.status_code == 201, response.content
    return (
        [q["sql"] for q in dealt.captured_queries],
        [q["sql"] for q in submitted.captured_queries],
    )


@pytest.mark.django_db(transaction=True)
def test_next_and_submit_cost_the_same_queries_every_time(project, annotator):
    factories.make_items(project, 10)
    other = factories.UserFactory()
    factories.MembershipFactory(project=project, user=other, role="annotator")
    counts = set()
    for client in (token_client(annotator), token_client(other, tokens=5)):
        for _ in range(3):
            dealt, submitted = cycle(client, project)
            counts.add((len(dealt), len(submitted)))
            # The token is read once per request; never every token of the account (knox's
            # sweep of expired ones, now done when a token is made: projects.tokens).
            for sql in (dealt, submitted):
                assert sum('"knox_authtoken"' in q for q in sql) == 1
    assert len(counts) == 1, counts  # the same for every round and whatever tokens are held
    # next: token, the membership with its project (the role check and the dealing's membership
    # in one read), send-backs, open reservation, the dealing transaction (9 with BEGIN and
    # COMMIT) and the assignment's view (2: the annotator's counts; a reservation made by this
    # request has no draft, answer or flag to read); submit: token, assignment, role, the
    # transaction (8: the current answer and a retry's in one read) and the project's webhook
    # subscriptions (1, for both of a submit's events).
    assert counts == {(15, 12)}
    dealt, submitted = cycle(token_client(annotator), project)
    for table in ("annotation_draft", "annotation_annotation", "annotation_itemflag"):
        assert not any(f'FROM "{table}"' in q for q in dealt), table
    assert not any(q.startswith('SELECT "projects_project"') for q in dealt)
    # one read of the membership, and its lock in the dealing transaction
    read = [q for q in dealt if q.startswith('SELECT "projects_membership"')]
    assert len(read) == 2 and read[1].startswith('SELECT "projects_membership"."id" AS "pk"'), read
    assert sum('FROM "webhooks_subscription"' in q for q in submitted) == 1
    assert sum(q.startswith('SELECT "annotation_annotation"."id"') for q in submitted) == 1


@pytest.mark.django_db(transaction=True)
def test_an_open_reservation_dealt_again_shows_its_draft(project, annotator):
    # Only the request that made a reservation skips the reads of its draft and answer: the
    # same reservation returned by a later next (a reload) shows what was saved on it.
    factories.make_items(project, 2)
    client = token_client(annotator)
    first = client.post(f"/api/projects/{project.slug}/next/", {}, format="json")
    assert first.data["draft"] is None and first.data["answer"] is None
    Draft.objects.create(assignment_id=first.data["id"], answer=ANSWER, revision=3)
    again = client.post(f"/api/projects/{project.slug}/next/", {}, format="json")
    assert again.data["id"] == first.data["id"]
    assert again.data["draft"]["revision"] == 3
    assert again.data["draft"]["answer"] == ANSWER


@pytest.mark.django_db(transaction=True)
def test_a_submit_takes_the_project_counter_row_last(project, annotator):
    # The answer's INSERT moves the project's answer counter row (a trigger), which every submit
    # in the project writes: from there to the commit, other submits wait. Only the assignment's
    # own UPDATE (which moves that row too) comes after it.
    factories.make_items(project, 2)
    _, submitted = cycle(token_client(annotator), project)
    insert = next(n for n, q in enumerate(submitted) if q.startswith('INSERT INTO "annotation_an'))
    commit = submitted.index("COMMIT")
    between = [q.split(" ", 2)[:2] for q in submitted[insert + 1 : commit]]
    assert between == [["UPDATE", '"annotation_assignment"']]
    assert any(q.startswith('DELETE FROM "annotation_draft"') for q in submitted[:insert])


@pytest.mark.django_db(transaction=True)
def test_next_reads_project_and_role_as_project_for_does(project, annotator):
    # The annotator's permission reads the membership with its project in one query: the slug
    # as typed in another case still reaches the project, and anyone who does not annotate in
    # it (a reviewer, a removed annotator, a stranger) gets the 404 of a missing project.
    factories.make_items(project, 3)
    project.slug = "mixedcase"
    project.save(update_fields=["slug"])
    dealt = token_client(annotator).post("/api/projects/MixedCase/next/", {}, format="json")
    assert dealt.status_code == 200, dealt.content
    missing = token_client(annotator).post("/api/projects/nosuch/next/", {}, format="json")
    assert missing.status_code == 404
    reviewer = factories.UserFactory()
    factories.MembershipFactory(project=project, user=reviewer, role="reviewer")
    removed = factories.UserFactory()
    factories.MembershipFactory(project=project, user=removed, role="annotator")
    Membership.objects.filter(project=project, user=removed).update(removed_at=timezone.now())
    for user in (reviewer, removed, factories.UserFactory()):
        refused = token_client(user).post(f"/api/projects/{project.slug}/next/", {}, format="json")
        assert refused.status_code == 404
        assert refused.json() == missing.json()
