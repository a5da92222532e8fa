"""Flags, skips, comments and send-backs (issue 30, items 2 and 3): the rules, the API, who may
see and do what, and where researchers find them."""

import pytest

from annotation import flags, services
from annotation.models import Annotation, Assignment, Draft, Item, ItemFlag, SendBack
from tests import factories
from tests.conftest import client_for

ANSWER = {"sentences": [1], "none": False, "helpfulness": 70}
OTHER_ANSWER = {"sentences": [2], "none": False, "helpfulness": 40}


def add_annotator(project):
    user = factories.UserFactory(username=factories.unique("annotator"))
    factories.MembershipFactory(project=project, user=user, role="annotator")
    return user


@pytest.fixture
def skipping(project):
    project.crowd = {"allow_skip": True}
    project.save()
    return project


# --- flags ------------------------------------------------------------------------------------


def test_a_flag_keeps_the_draft_and_is_listed_for_researchers(
    project, annotator, annotator_client, researcher_client, items
):
    assignment = services.assignment_next(project=project, annotator=annotator)
    services.draft_save(
        assignment=assignment, answer={"sentences": [2]}, time_spent_ms=5, revision=1
    )
    response = annotator_client.post(
        f"/api/assignments/{assignment.pk}/flag/",
        {"reason": "evidence broken", "text": "the link is dead"},
        format="json",
    )
    assert response.status_code == 201, response.data
    assert Draft.objects.get(assignment=assignment).answer == {"sentences": [2]}
    assert Assignment.objects.get(pk=assignment.pk).state == Assignment.State.RESERVED
    listed = researcher_client.get(f"/api/projects/{project.slug}/flags/?state=open").data
    assert [(f["item"], f["reason"], f["text"]) for f in listed["results"]] == [
        (assignment.item_id, "evidence broken", "the link is dead")
    ]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"reason": "no such reason"}, "reason"),
        ({"reason": ""}, "reason"),
        ({"reason": "other", "text": "  "}, "text"),
        ({"reason": "ambiguous", "text": "x" * 2001}, "text"),
        ({"reason": "ambiguous", "skip": True}, "skip"),  # the project does not allow skipping
        ({"reason": ["ambiguous"]}, "reason"),
    ],
)
def test_bad_flags_are_a_400_naming_the_field(
    project, annotator, annotator_client, items, body, field
):
    assignment = services.assignment_next(project=project, annotator=annotator)
    response = annotator_client.post(f"/api/assignments/{assignment.pk}/flag/", body, format="json")
    assert response.status_code in (400, 403), response.data
    assert response.data["field"] == field
    assert not ItemFlag.objects.exists()


def test_the_reasons_are_the_projects_own(project, annotator, items):
    project.crowd = {"flag_reasons": ["typo", "other"]}
    project.save()
    assignment = services.assignment_next(project=project, annotator=annotator)
    flags.flag_raise(assignment=assignment, reason="typo")
    with pytest.raises(flags.FlagRefused) as refused:
        flags.flag_raise(assignment=assignment, reason="ambiguous")
    assert refused.value.field == "reason"


def test_nobody_flags_anothers_assignment(project, annotator, items):
    assignment = services.assignment_next(project=project, annotator=annotator)
    intruder = client_for(add_annotator(project))
    response = intruder.post(
        f"/api/assignments/{assignment.pk}/flag/", {"reason": "ambiguous"}, format="json"
    )
    assert response.status_code == 404


def test_a_flag_raised_event_is_emitted(project, annotator, items, monkeypatch):
    sent = []
    monkeypatch.setattr("annotation.flags.event_emit", lambda **kwargs: sent.append(kwargs))
    assignment = services.assignment_next(project=project, annotator=annotator)
    flag = flags.flag_raise(assignment=assignment, reason="offensive")
    assert [s["event"] for s in sent] == ["flag.raised"]
    data = sent[0]["data"]()
    assert data["flag"] == flag.pk and data["reason"] == "offensive" and not data["skipped"]


# --- skips ------------------------------------------------------------------------------------


def test_a_skip_frees_the_place_and_the_item_never_comes_back(skipping, annotator, items):
    project = skipping
    project.annotators_per_item = 1
    project.save()
    first = services.assignment_next(project=project, annotator=annotator)
    assert Item.objects.get(pk=first.item_id).assigned_count == 1
    flags.item_skip(assignment=first)
    assert Item.objects.get(pk=first.item_id).assigned_count == 0
    assert Assignment.objects.get(pk=first.pk).state == Assignment.State.SKIPPED
    seen = []
    while (a := services.assignment_next(project=project, annotator=annotator)) is not None:
        seen.append(a.item_id)
        services.annotation_submit(assignment=a, answer=ANSWER)
    assert first.item_id not in seen and len(seen) == len(items) - 1
    # Somebody else gets it: N per item still holds.
    other = add_annotator(project)
    assert services.assignment_next(project=project, annotator=other).item_id == first.item_id


def test_skip_is_refused_where_the_project_does_not_allow_it(
    project, annotator, annotator_client, items
):
    assignment = services.assignment_next(project=project, annotator=annotator)
    response = annotator_client.post(f"/api/assignments/{assignment.pk}/skip/", {}, format="json")
    assert response.status_code == 400 and response.data["field"] == "skip"
    assert Assignment.objects.get(pk=assignment.pk).state == Assignment.State.RESERVED


def test_a_skipped_item_cannot_be_answered_so_n_per_item_holds(skipping, annotator, items):
    assignment = services.assignment_next(project=skipping, annotator=annotator)
    flags.item_skip(assignment=assignment)
    with pytest.raises(services.WorkflowError) as refused:
        services.annotation_submit(assignment=assignment, answer=ANSWER)
    assert refused.value.code == "conflict"
    assert Item.objects.get(pk=assignment.item_id).submitted_count == 0


def test_a_submitted_item_cannot_be_skipped(skipping, annotator, items):
    assignment = services.assignment_next(project=skipping, annotator=annotator)
    services.annotation_submit(assignment=assignment, answer=ANSWER)
    with pytest.raises(flags.FlagRefused) as refused:
        flags.item_skip(assignment=assignment)
    assert refused.value.code == "conflict"


def test_reopening_a_fixed_item_gives_it_back_to_who_skipped_it(
    skipping, annotator, researcher, items
):
    project = skipping
    first = services.assignment_next(project=project, annotator=annotator)
    flag = flags.item_skip(assignment=first, reason="evidence broken")
    flags.flag_act(flag=flag, user=researcher, action="reopen_item", response="fixed the link")
    assert ItemFlag.objects.get(pk=flag.pk).state == "resolved"
    again = [services.assignment_next(project=project, annotator=annotator)]
    while again[-1] is not None:
        services.annotation_submit(assignment=again[-1], answer=ANSWER)
        again.append(services.assignment_next(project=project, annotator=annotator))
    assert first.item_id in [a.item_id for a in again if a is not None]


# --- researchers act; projects are apart ------------------------------------------------------


def test_researchers_answer_resolve_and_exclude(project, annotator, researcher_client, items):
    assignment = services.assignment_next(project=project, annotator=annotator)
    flag = flags.flag_raise(assignment=assignment, reason="ambiguous", text="two readings")
    url = f"/api/projects/{project.slug}/flags/{flag.pk}/"
    answered = researcher_client.post(url, {"action": "answer", "response": "Take the first"})
    assert answered.status_code == 200 and answered.data["state"] == "open"
    bad = researcher_client.post(url, {"action": "answer", "response": ""}, format="json")
    assert bad.status_code == 400 and bad.data["field"] == "response"
    bad = researcher_client.post(url, {"action": "delete"}, format="json")
    assert bad.status_code == 400 and bad.data["field"] == "action"
    excluded = researcher_client.post(url, {"action": "exclude"}, format="json")
    assert excluded.data["state"] == "resolved"
    assert assignment.item_id not in flags.agreement_items(project=project).values_list(
        "pk", flat=True
    )
    researcher_client.post(url, {"action": "include"}, format="json")
    assert assignment.item_id in flags.agreement_items(project=project).values_list("pk", flat=True)


def test_a_researcher_of_another_project_never_sees_or_acts_on_its_flags(project, annotator, items):
    assignment = services.assignment_next(project=project, annotator=annotator)
    flag = flags.flag_raise(assignment=assignment, reason="ambiguous")
    other = factories.ProjectFactory()
    stranger = factories.UserFactory(username=factories.unique("stranger"))
    factories.MembershipFactory(project=other, user=stranger, role="researcher")
    client = client_for(stranger)
    assert client.get(f"/api/projects/{project.slug}/flags/").status_code == 404
    assert (
        client.post(
            f"/api/projects/{project.slug}/flags/{flag.pk}/", {"action": "resolve"}, format="json"
        ).status_code
        == 404
    )
    # Through their own project's URL the flag does not exist either.
    assert (
        client.post(
            f"/api/projects/{other.slug}/flags/{flag.pk}/", {"action": "resolve"}, format="json"
        ).status_code
        == 404
    )
    assert client.get(f"/api/projects/{other.slug}/flags/").data["results"] == []
    assert (
        client.get(f"/api/projects/{other.slug}/items/{assignment.item_id}/comments/").status_code
        == 404
    )
    assert ItemFlag.objects.get(pk=flag.pk).state == "open"
    # Annotators do not read flags.
    annotator_client = client_for(annotator)
    assert annotator_client.get(f"/api/projects/{project.slug}/flags/").status_code == 404


def test_comment_thread_for_researchers_and_reviewers(project, researcher_client, items):
    reviewer = factories.UserFactory(username=factories.unique("reviewer"))
    factories.MembershipFactory(project=project, user=reviewer, role="reviewer")
    url = f"/api/projects/{project.slug}/items/{items[0].pk}/comments/"
    assert researcher_client.post(url, {"body": "Is the claim complete?"}).status_code == 201
    assert client_for(reviewer).post(url, {"body": "It is cut short."}).status_code == 201
    bad = researcher_client.post(url, {"body": ""}, format="json")
    assert bad.status_code == 400 and bad.data["field"] == "body"
    thread = client_for(reviewer).get(url).data["results"]
    assert [c["body"] for c in thread] == ["Is the claim complete?", "It is cut short."]


# --- send back --------------------------------------------------------------------------------


def test_a_sent_back_answer_comes_first_and_keeps_its_history(
    project, annotator, annotator_client, researcher_client, items
):
    first = services.assignment_next(project=project, annotator=annotator)
    original, _ = services.annotation_submit(assignment=first, answer=ANSWER)
    second = services.assignment_next(project=project, annotator=annotator)
    services.annotation_submit(assignment=second, answer=ANSWER)
    response = researcher_client.post(
        f"/api/projects/{project.slug}/send-back/",
        {"annotation": original.pk, "note": "Sentence 2 carries the claim."},
        format="json",
    )
    assert response.status_code == 201, response.data
    again = researcher_client.post(
        f"/api/projects/{project.slug}/send-back/",
        {"annotation": original.pk, "note": "twice"},
        format="json",
    )
    assert again.status_code == 409 and again.data["field"] == "annotation"
    shown = annotator_client.post(f"/api/projects/{project.slug}/next/").data
    assert shown["id"] == first.pk
    assert shown["sent_back"]["note"] == "Sentence 2 carries the claim."
    assert shown["answer"]["answer"] == ANSWER  # their answer is there to revise
    assert shown["may_skip"] is False  # submitted work cannot be skipped (a probe finding)
    revised = annotator_client.post(
        f"/api/assignments/{first.pk}/submit/", {"answer": OTHER_ANSWER}, format="json"
    )
    assert revised.status_code == 201 and revised.data["version"] == 2
    versions = list(Annotation.objects.filter(assignment=first).order_by("version"))
    assert [v.answer for v in versions] == [ANSWER, OTHER_ANSWER]
    assert [v.is_current for v in versions] == [False, True]
    settled = SendBack.objects.get()
    assert settled.version == 1 and settled.answered_version == 2
    following = annotator_client.post(f"/api/projects/{project.slug}/next/").data
    assert following["id"] not in (first.pk, second.pk) and following["sent_back"] is None


def test_send_back_checks_its_input_and_the_project(project, annotator, researcher_client, items):
    first = services.assignment_next(project=project, annotator=annotator)
    original, _ = services.annotation_submit(assignment=first, answer=ANSWER)
    url = f"/api/projects/{project.slug}/send-back/"
    no_note = researcher_client.post(url, {"annotation": original.pk, "note": ""}, format="json")
    assert no_note.status_code == 400 and no_note.data["field"] == "note"
    bad_id = researcher_client.post(url, {"annotation": "x", "note": "n"}, format="json")
    assert bad_id.status_code == 400 and bad_id.data["field"] == "annotation"
    other = factories.ProjectFactory()
    stranger = factories.UserFactory(username=factories.unique("stranger"))
    factories.MembershipFactory(project=other, user=stranger, role="researcher")
    elsewhere = client_for(stranger).post(
        f"/api/projects/{other.slug}/send-back/",
        {"annotation": original.pk, "note": "n"},
        format="json",
    )
    assert elsewhere.status_code == 404
    assert not SendBack.objects.exists()
    annotator_try = client_for(annotator).post(
        url, {"annotation": original.pk, "note": "n"}, format="json"
    )
    assert annotator_try.status_code == 404


def test_the_review_page_marks_an_answer_sent_back(project, annotator, researcher, items):
    from django.test import Client

    first = services.assignment_next(project=project, annotator=annotator)
    original, _ = services.annotation_submit(assignment=first, answer=ANSWER)
    client = Client()
    client.force_login(researcher)
    url = f"/p/{project.slug}/review/{first.item_id}/"
    assert "sent back · waiting" not in client.get(url).content.decode()
    flags.send_back(project=project, annotation_id=original.pk, reviewer=researcher, note="n")
    assert "sent back · waiting" in client.get(url).content.decode()


def test_one_open_flag_per_annotator_and_item_and_the_list_is_paged(
    project, annotator, researcher, annotator_client, researcher_client, items, monkeypatch
):
    """Found by the outside probe: 3,000 flags on one item were all accepted, and the list
    stopped at 1000 with no sign of more."""
    assignment = services.assignment_next(project=project, annotator=annotator)
    url = f"/api/assignments/{assignment.pk}/flag/"
    assert annotator_client.post(url, {"reason": "ambiguous"}, format="json").status_code == 201
    again = annotator_client.post(url, {"reason": "other", "text": "spam"}, format="json")
    assert again.status_code == 409 and again.data["field"] == "reason"
    flag = ItemFlag.objects.get(assignment=assignment)
    flags.flag_act(flag=flag, user=researcher, action="resolve")
    assert annotator_client.post(url, {"reason": "ambiguous"}, format="json").status_code == 201

    for item in items[1:]:  # more flags, by other annotators
        other = add_annotator(project)
        mine = services.assignment_next(project=project, annotator=other)
        flags.flag_raise(assignment=mine, reason="ambiguous", text=f"on {item.pk}")
    monkeypatch.setattr(flags, "MAX_LISTED", 2)
    seen, address = [], f"/api/projects/{project.slug}/flags/"
    while address:
        page = researcher_client.get(address).data
        assert len(page["results"]) <= 2
        seen += [f["id"] for f in page["results"]]
        address = page["next"]
    assert seen == sorted(ItemFlag.objects.values_list("id", flat=True), reverse=True)
    bad = researcher_client.get(f"/api/projects/{project.slug}/flags/?before=x")
    assert bad.status_code == 400 and bad.data["field"] == "before"


def test_the_researchers_answer_to_a_flag_reaches_its_annotator(
    project, annotator, researcher, annotator_client, items
):
    """Found by the outside probe: an answer was stored but never shown to the annotator."""
    assignment = services.assignment_next(project=project, annotator=annotator)
    flag = flags.flag_raise(assignment=assignment, reason="ambiguous", text="two readings")
    shown = annotator_client.get(f"/api/assignments/{assignment.pk}/").data
    assert shown["flag_answers"] == []
    flags.flag_act(flag=flag, user=researcher, action="answer", response="Read it as a whole.")
    shown = annotator_client.get(f"/api/assignments/{assignment.pk}/").data
    assert shown["flag_answers"] == [
        {"reason": "ambiguous", "reason_label": "Ambiguous", "response": "Read it as a whole."}
    ]
    # A default reason reads in the annotator's language (the researcher's words as written).
    german = annotator_client.get(f"/api/assignments/{assignment.pk}/?lang=de").data
    assert german["flag_answers"] == [
        {"reason": "ambiguous", "reason_label": "Mehrdeutig", "response": "Read it as a whole."}
    ]
    other = add_annotator(project)
    theirs = services.assignment_next(project=project, annotator=other)
    assert client_for(other).get(f"/api/assignments/{theirs.pk}/").data["flag_answers"] == []


def test_the_annotators_own_flags_come_back_with_the_item_after_a_reload(
    project, annotator, researcher, annotator_client, items, django_assert_num_queries
):
    """Found by the outside probe: after a reload nothing said the item was flagged."""
    assignment = services.assignment_next(project=project, annotator=annotator)
    url = f"/api/assignments/{assignment.pk}/"
    assert annotator_client.get(url).data["flags"] == []
    flag = flags.flag_raise(assignment=assignment, reason="ambiguous", text="two readings")
    assert annotator_client.get(url).data["flags"] == [
        {"reason": "ambiguous", "reason_label": "Ambiguous", "state": "open"}
    ]
    flags.flag_act(flag=flag, user=researcher, action="resolve")
    assert annotator_client.get(url).data["flags"] == [
        {"reason": "ambiguous", "reason_label": "Ambiguous", "state": "resolved"}
    ]
    # Read with the researchers' answers: no query more than before the flags were shown.
    from annotation import selectors

    assignment.refresh_from_db()
    with django_assert_num_queries(5):
        selectors.assignment_view(assignment=assignment)
    other = add_annotator(project)
    theirs = services.assignment_next(project=project, annotator=other)
    assert client_for(other).get(f"/api/assignments/{theirs.pk}/").data["flags"] == []
    # A default reason in the annotator's language (kept for the visit: asked last).
    assert annotator_client.get(f"{url}?lang=de").data["flags"][0]["reason_label"] == "Mehrdeutig"


def test_a_skip_is_not_shown_as_a_flag(skipping, annotator, items):
    assignment = services.assignment_next(project=skipping, annotator=annotator)
    flags.item_skip(assignment=assignment, reason="ambiguous")
    assignment.refresh_from_db()
    from annotation import selectors

    assert selectors.assignment_view(assignment=assignment)["flags"] == []
