"""Control items look exactly like regular items: page, API, ids and the work the server does."""

import re

from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from annotation.models import Assignment
from tests.conftest import client_for
from tests.crowd.conftest import RIGHT, WRONG, add_annotator, crowd_project


def shape(value):
    """The structure of a JSON value without its content: keys and types, list elements merged."""
    if isinstance(value, dict):
        return {key: shape(inner) for key, inner in value.items()}
    if isinstance(value, list):
        return ["list", sorted({repr(shape(inner)) for inner in value})]
    return type(value).__name__


def control_and_regular(project, user):
    client = client_for(user)
    first = client.post(f"/api/projects/{project.slug}/next/").data
    batch = Assignment.objects.filter(batch_id=Assignment.objects.get(pk=first["id"]).batch_id)
    control = batch.get(item__kind="control")
    regular = batch.filter(item__kind="regular").order_by("sequence").first()
    return client, control, regular


def test_the_api_of_a_control_item_and_a_regular_item_differ_only_in_their_content(db):
    project = crowd_project(crowd={"batch_size": 2, "controls_per_batch": 1}, regular=4, controls=2)
    user = add_annotator(project)
    client, control, regular = control_and_regular(project, user)
    seen_control = client.get(f"/api/assignments/{control.id}/")
    seen_regular = client.get(f"/api/assignments/{regular.id}/")
    assert seen_control.status_code == seen_regular.status_code == 200
    a, b = seen_control.data, seen_regular.data
    assert shape(a) == shape(b)
    assert set(seen_control.headers) == set(seen_regular.headers)
    # The values that are not item content are the same, except where each sits in the batch.
    for key in ("state", "expires_at", "task_type", "counts", "draft", "answer"):
        assert a[key] == b[key], key
    assert {k: v for k, v in a["batch"].items() if k != "position"} == {
        k: v for k, v in b["batch"].items() if k != "position"
    }
    assert abs(a["id"] - b["id"]) == abs(a["sequence"] - b["sequence"])  # ids follow batch order
    assert "control" not in str(a) and "kind" not in a["item"] and "gold" not in str(a)

    # Submitting: the same status and response shape whether the control answer is right or wrong.
    responses = [
        client.post(f"/api/assignments/{control.id}/submit/", {"answer": WRONG}, format="json"),
        client.post(f"/api/assignments/{regular.id}/submit/", {"answer": RIGHT}, format="json"),
    ]
    assert [r.status_code for r in responses] == [201, 201]
    assert shape(responses[0].data) == shape(responses[1].data)
    history = client.get(f"/api/projects/{project.slug}/history/").data["results"]
    submitted = [entry for entry in history if entry["state"] == "submitted"]
    assert len(submitted) == 2 and len({repr(shape(entry)) for entry in submitted}) == 1


def test_the_annotation_page_of_a_control_item_and_a_regular_item_is_the_same(db):
    project = crowd_project(crowd={"batch_size": 2, "controls_per_batch": 1}, regular=4, controls=2)
    user = add_annotator(project)
    _, control, regular = control_and_regular(project, user)
    browser = Client()
    browser.force_login(user)
    pages = []
    for assignment in (control, regular):
        page = browser.get(
            f"/p/{project.slug}/annotate/?assignment={assignment.id}"
        ).content.decode()
        reopen = f'reopen: "{assignment.id}"'
        assert page.count(reopen) == 1  # the only place the page names the assignment
        page = page.replace(reopen, 'reopen: "ID"')
        # The CSRF token is masked afresh on every response, whatever the page.
        pages.append(re.sub(r'name="csrfmiddlewaretoken" value="\w+"', "CSRF", page))
    assert pages[0] == pages[1]


def test_submitting_a_control_answer_costs_the_server_the_same_work_as_a_regular_one(db):
    project = crowd_project(
        crowd={"batch_size": 3, "controls_per_batch": 1, "min_controls": 5}, regular=6, controls=2
    )
    user = add_annotator(project)
    client, control, regular = control_and_regular(project, user)
    counts = []
    for assignment, answer in ((control, WRONG), (regular, RIGHT)):
        with CaptureQueriesContext(connection) as queries:
            response = client.post(
                f"/api/assignments/{assignment.id}/submit/", {"answer": answer}, format="json"
            )
        assert response.status_code == 201
        counts.append(len(queries))
    assert counts[0] == counts[1]


def test_dealing_a_control_one_at_a_time_costs_the_same_queries_as_a_regular_item(db):
    """New annotators ask for their first item until one is dealt a control and one a regular
    item (each draw is 1 in 2); the two requests cost the same queries. The first request is not
    measured: it warms what every later one finds warm."""
    from annotation import services

    project = crowd_project(crowd={"control_rate": 0.5}, regular=30, controls=4, per_item=30)
    services.assignment_next(project=project, annotator=add_annotator(project))
    counts = {}
    for _ in range(30):  # both kinds within 30 draws but for a chance of 2 in a billion
        user = add_annotator(project)
        with CaptureQueriesContext(connection) as queries:
            assignment = services.assignment_next(project=project, annotator=user)
        counts.setdefault(assignment.item.kind, len(queries))
        if len(counts) == 2:
            break
    assert set(counts) == {"control", "regular"}
    assert counts["control"] == counts["regular"]


def test_the_admin_lists_batches_crowd_sessions_and_adjudications(db):
    from tests import factories

    admin = factories.UserFactory(is_staff=True, is_superuser=True)
    project = crowd_project(crowd={"batch_size": 2, "controls_per_batch": 1}, regular=2, controls=1)
    client_for(add_annotator(project)).post(f"/api/projects/{project.slug}/next/")
    browser = Client()
    browser.force_login(admin)
    for path in ("annotation/batch/", "crowd/crowdentry/", "annotation/adjudication/"):
        assert browser.get(f"/admin/{path}").status_code == 200, path
