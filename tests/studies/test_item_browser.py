"""The item browser (issue 26, item 3): figures by hand, filters against an independent
computation on random data, constant queries per page, access, reference lookup, export."""

from __future__ import annotations

import csv
import io
import json
from itertools import combinations

import pytest
from django.db import connection
from django.db.models import F
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from annotation.models import Assignment, ExternalAnnotation, ExternalCoder, Item
from annotation.references import item_reference
from llm_judges import prompts
from llm_judges.models import Judge, JudgeResult
from projects.models import Membership
from studies.export_check import check_export, export_body
from studies.selectors.item_browser import (
    ItemFilter,
    item_filter_from_query,
    item_page,
    item_rows_all,
)
from studies.services.item_figures import item_figures_ensure, item_figures_refresh
from tests import factories
from tests.agreement.helpers import answer, seeded_study


def browser(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def walk(project, item_filter: ItemFilter, page_size: int) -> list:
    """Every row of the filter, page by page through the cursor."""
    rows, after = [], ""
    while True:
        page = item_page(project=project, item_filter=item_filter, after=after, page_size=page_size)
        rows.extend(page.rows)
        if page.next_after is None:
            return rows
        after = page.next_after


def judge_for(project, name="gpt-judge") -> Judge:
    judge = Judge.objects.create(
        project=project, name=factories.unique(name), kind="llm", model="m"
    )
    return judge


def judge_answer(project, judge, item, sentences, *, raw="", status="ok") -> JudgeResult:
    return JudgeResult.objects.create(
        item=item,
        judge=judge,
        prompt_version=judge.prompt_version,
        setting=prompts.get(project.task_type).setting(project.config),
        status=status,
        answer={"sentences": list(sentences), "none": not sentences} if status == "ok" else None,
        raw=raw,
    )


# --- figures by hand ---------------------------------------------------------------------------


def test_figures_of_the_hand_computed_study(db, researcher):
    """tests/agreement/helpers.py: gold is sentence 1 on every item.
    c0: [1] [1] [1]       → all 3 pairs agree: 1;    all correct: 1
    c1: [1] [1,2] [2]     → no pair agrees: 0;       a correct: 1/3
    c2: [0] [0] [1]       → 1 pair of 3: 1/3;        c correct: 1/3
    c3: [1] [1] []        → 1 pair of 3: 1/3;        a, b correct: 2/3
    A judge answering [1] everywhere: humans agreeing 3/3, 1/3, 1/3 ([1] is c's), 2/3."""
    project, items, _ = seeded_study(researcher)
    judge = judge_for(project)
    for item in items.values():
        judge_answer(project, judge, item, [1])
    item_figures_refresh(project=project)
    rows = {r.external_id: r for r in walk(project, ItemFilter(judge=judge.name), page_size=10)}
    third = 1 / 3
    assert {k: r.agreement for k, r in rows.items()} == pytest.approx(
        {"c0": 1.0, "c1": 0.0, "c2": third, "c3": third}
    )
    assert {k: r.gold_score for k, r in rows.items()} == pytest.approx(
        {"c0": 1.0, "c1": third, "c2": third, "c3": 2 * third}
    )
    assert {k: r.judge_agreement for k, r in rows.items()} == pytest.approx(
        {"c0": 1.0, "c1": third, "c2": third, "c3": 2 * third}
    )
    assert {k: r.judge_verdict for k, r in rows.items()} == {
        "c0": "agrees",
        "c1": "disagrees",
        "c2": "disagrees",
        "c3": "agrees",
    }
    assert {r.status for r in rows.values()} == {"complete"}


def test_a_disqualified_annotator_leaves_the_figures_and_a_new_answer_refreshes_them(
    db, researcher
):
    project, items, users = seeded_study(researcher)
    item_figures_ensure(project=project)
    c1 = items["c1"]
    assert walk(project, ItemFilter(q="c1"), 5)[0].agreement == 0.0
    Membership.objects.filter(project=project, user=users["c"]).update(
        qualification=Membership.Qualification.DISQUALIFIED
    )
    status = item_figures_ensure(project=project)  # the data version moved: refreshed inline
    assert status.fresh
    (row,) = walk(project, ItemFilter(q="c1"), 5)
    assert row.agreement == 0.0 and row.gold_score == 0.5  # a [1] and b [1,2] remain
    answer(c1, users["b"], [1])  # b revises to [1]: now a and b agree
    assert item_figures_ensure(project=project).fresh
    (row,) = walk(project, ItemFilter(q="c1"), 5)
    assert row.agreement == 1.0 and row.gold_score == 1.0


# --- the filters equal an independent computation on random data ------------------------------

WORDS = ("zebra", "quokka", "ibis", "okapi")
N_PER_ITEM = 2
# Few distinct answers, so that equal answers, ties and the 0.5 boundary are common.
CHOICES = st.sampled_from([[], [0], [1], [0, 1]])


@st.composite
def studies(draw):
    n_items = draw(st.integers(1, 9))
    items = []
    for _n in range(n_items):
        items.append(
            {
                "word": draw(st.sampled_from(WORDS)),
                "ext_word": draw(st.sampled_from(WORDS)),
                "kind": draw(st.sampled_from(["regular", "regular", "control"])),
                "group": draw(st.sampled_from(["", "A", "B"])),
                "gold": draw(st.booleans()),
                # annotator index -> sentences chosen, or "reserved" (no answer yet)
                "answers": draw(
                    st.dictionaries(
                        st.integers(0, 3),
                        st.one_of(st.just("reserved"), CHOICES),
                        max_size=4,
                    )
                ),
                "judge": draw(st.one_of(st.none(), CHOICES)),
            }
        )
    disqualified = draw(st.sets(st.integers(0, 3), max_size=1))
    return items, disqualified


FILTER_VALUES = {
    "q": ["", *WORDS, "ZEBRA", "ref"],
    "status": ["open", "in_progress", "complete"],
    "kind": ["regular", "control"],
    "group": ["", "A"],
    "answers_min": ["1", "2"],
    "answers_max": ["1", "3"],
    "agreement_min": ["0.5", "1"],
    "agreement_max": ["0", "0.5"],
    "gold_min": ["0.5"],
    "gold_max": ["0.5", "1"],
    "verdict": ["agrees", "disagrees", "unjudged"],
}


@st.composite
def filters(draw):
    """At most two conditions at a time (more leave too few rows to page through), any sort."""
    chosen = draw(st.sets(st.sampled_from(sorted(FILTER_VALUES)), max_size=2))
    f = {
        name: draw(st.sampled_from(FILTER_VALUES[name])) if name in chosen else ""
        for name in FILTER_VALUES
    }
    f.update(
        use_judge=draw(st.booleans()),
        sort=draw(
            st.sampled_from(["position", "external_id", "answers", "agreement", "gold", "judge"])
        ),
        descending=draw(st.sampled_from(["", "1"])),
        page_size=draw(st.integers(1, 3)),
    )
    return f


def _build(items_spec, disqualified, researcher):
    project = factories.ProjectFactory(annotators_per_item=N_PER_ITEM)
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    users = []
    for k in range(4):
        user = factories.UserFactory()
        factories.MembershipFactory(
            project=project,
            user=user,
            role="annotator",
            qualification="disqualified" if k in disqualified else "not_required",
        )
        users.append(user)
    judge = judge_for(project)
    created = factories.make_items(project, len(items_spec))
    expected = []
    now = timezone.now()
    for n, (item, spec) in enumerate(zip(created, items_spec, strict=True)):
        ext = f"{spec['ext_word']}{n:03d}"
        payload = {**item.payload, "id": ext, "claim": f"The {spec['word']} claim."}
        Item.objects.filter(pk=item.pk).update(
            external_id=ext,
            payload=payload,
            kind=spec["kind"],
            group=spec["group"],
            gold=item.gold if spec["gold"] else None,
        )
        item.refresh_from_db()
        for k, chosen in spec["answers"].items():
            if spec["kind"] == "regular":  # the workflow's place-taking, which no trigger does
                Item.objects.filter(pk=item.pk).update(assigned_count=F("assigned_count") + 1)
            if chosen == "reserved":
                Assignment.objects.create(
                    project=project,
                    item=item,
                    annotator=users[k],
                    reserved_at=now,
                    expires_at=now + timezone.timedelta(hours=1),
                    sequence=n + 1,
                )
            else:
                answer(item, users[k], chosen)
        if spec["judge"] is not None:
            judge_answer(project, judge, item, spec["judge"])
        expected.append(_independent(item, spec, disqualified))
    return project, judge, expected


def _independent(item, spec, disqualified) -> dict:
    """What the browser must show for one item, computed here from the generated data."""
    given = {k: v for k, v in spec["answers"].items() if v != "reserved"}
    counted = [sorted(v) for k, v in given.items() if k not in disqualified]
    pairs = list(combinations(counted, 2))
    agreement = sum(a == b for a, b in pairs) / len(pairs) if pairs else None
    gold = sorted((item.gold or {}).get("sentences", [])) if spec["gold"] else None
    gold_score = (
        sum(c == gold for c in counted) / len(counted) if gold is not None and counted else None
    )
    held = any(v == "reserved" for v in spec["answers"].values()) and spec["kind"] == "regular"
    status = "complete" if len(given) >= N_PER_ITEM else "in_progress" if given or held else "open"
    share = None
    if spec["judge"] is not None and counted:
        share = sum(c == sorted(spec["judge"]) for c in counted) / len(counted)
    return {
        "id": item.pk,
        "position": item.position,
        "external_id": item.external_id,
        "reference": item_reference(item_id=item.pk),
        "text": f"{item.external_id} The {spec['word']} claim.".lower(),
        "kind": spec["kind"],
        "group": spec["group"],
        "status": status,
        "answers": len(given),
        "agreement": agreement,
        "gold": gold_score,
        "judged": spec["judge"] is not None,
        "judge": share,
    }


def _matches(row: dict, f: dict, q: str) -> bool:
    def within(value, low, high):
        if low == "" and high == "":
            return True
        if value is None:
            return False
        return (low == "" or value >= float(low)) and (high == "" or value <= float(high))

    if q and not (q.lower() in row["text"] or q == row["reference"]):
        return False
    checks = [
        not f["status"] or row["status"] == f["status"],
        not f["kind"] or row["kind"] == f["kind"],
        not f["group"] or row["group"] == f["group"],
        within(row["answers"], f["answers_min"], f["answers_max"]),
        within(row["agreement"], f["agreement_min"], f["agreement_max"]),
        within(row["gold"], f["gold_min"], f["gold_max"]),
    ]
    verdict = f["verdict"] if f["use_judge"] else ""
    if verdict == "agrees":
        checks.append(row["judge"] is not None and row["judge"] > 0.5)
    elif verdict == "disagrees":
        checks.append(row["judge"] is not None and row["judge"] <= 0.5)
    elif verdict == "unjudged":
        checks.append(not row["judged"])
    return all(checks)


def _ordered(rows: list[dict], sort: str, descending: bool) -> list[int]:
    present = [r for r in rows if r[sort] is not None]
    empty = [r for r in rows if r[sort] is None]
    present.sort(key=lambda r: (r[sort], r["id"]), reverse=descending)
    empty.sort(key=lambda r: r["id"], reverse=descending)
    return [r["id"] for r in present + empty]


@pytest.mark.django_db
@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(study=studies(), choices=st.lists(filters(), min_size=3, max_size=3))
def test_filters_and_sorts_equal_an_independent_computation(researcher, study, choices):
    items_spec, disqualified = study
    project, judge, expected = _build(items_spec, disqualified, researcher)
    item_figures_refresh(project=project)
    for f in choices:
        use_judge = f["use_judge"]
        sort = f["sort"] if use_judge or f["sort"] != "judge" else "agreement"
        q = expected[0]["reference"] if f["q"] == "ref" else f["q"]
        params = {
            k: v
            for k, v in f.items()
            if k not in ("use_judge", "page_size", "q", "sort", "verdict")
        }
        params.update(q=q, sort=sort, verdict=f["verdict"] if use_judge else "")
        if use_judge:
            params["judge"] = judge.name
        item_filter = item_filter_from_query(params)
        rows = walk(project, item_filter, f["page_size"])
        wanted = [r for r in expected if _matches(r, {**f, "sort": sort}, q)]
        assert [r.id for r in rows] == _ordered(wanted, sort, bool(f["descending"])), params
        by_id = {r["id"]: r for r in expected}
        for row in rows:
            truth = by_id[row.id]
            assert (row.status, row.answers) == (truth["status"], truth["answers"])
            assert row.agreement == pytest.approx(truth["agreement"])
            assert row.gold_score == pytest.approx(truth["gold"])
            if use_judge:
                assert row.judge_agreement == pytest.approx(truth["judge"])


# --- queries per page --------------------------------------------------------------------------


def _project_with(researcher, n_items: int):
    project = factories.ProjectFactory(annotators_per_item=2)
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    users = [factories.UserFactory() for _ in range(3)]
    for user in users:
        factories.MembershipFactory(project=project, user=user, role="annotator")
    judge = judge_for(project)
    for n, item in enumerate(factories.make_items(project, n_items)):
        answer(item, users[0], [1])
        answer(item, users[1], [1] if n % 2 else [2])
        judge_answer(project, judge, item, [1])
    return project, judge


def _page_queries(client, url) -> int:
    client.get(url)  # the first visit may refresh the figures
    with CaptureQueriesContext(connection) as queries:
        response = client.get(url)
    assert response.status_code == 200
    return len(queries)


@pytest.mark.parametrize(
    "query",
    [
        "",
        "?sort=agreement&descending=1&status=complete",
        "?judge={judge}&verdict=disagrees&sort=judge",
        "?q=claim&kind=regular&agreement_max=0.5",
        # a range over a figure reads the figures' index (issue 31): the bench's filter, both
        # directions, gold, and a judge's verdict in the judge's order, going down
        "?status=complete&agreement_max=0.5&sort=agreement",
        "?agreement_max=0.5&sort=agreement&descending=1",
        "?gold_max=0.5&sort=gold&descending=1",
        "?judge={judge}&verdict=disagrees&sort=judge&descending=1",
        "?group=g0",
    ],
)
def test_queries_per_page_do_not_grow_with_the_items(db, researcher, query):
    counts = []
    for n_items in (10, 200):
        project, judge = _project_with(researcher, n_items)
        url = reverse("project-items", args=[project.slug]) + query.format(judge=judge.name)
        client = browser(researcher)
        counts.append(_page_queries(client, url))
        page = client.get(url).context["page"]
        if "group" not in query:
            halved = "agreement_max" in query or "verdict" in query or "gold_max" in query
            assert len(page.rows) == min(n_items // (2 if halved else 1), 50), query
        # the next page costs the same
        if page.next_after:
            counts.append(
                _page_queries(
                    client, url + ("&" if "?" in url else "?") + f"after={page.next_after}"
                )
            )
    assert len(set(counts)) == 1, counts


# --- access -----------------------------------------------------------------------------------


def test_only_the_projects_researchers_reach_the_browser(db, researcher):
    project, items, users = seeded_study(researcher)
    item = items["c0"]
    urls = [
        reverse("project-items", args=[project.slug]),
        reverse("project-item", args=[project.slug, item.pk]),
        reverse("project-item-find", args=[project.slug]) + "?ref=c0",
        reverse("project-items-export", args=[project.slug, "csv"]),
    ]
    reviewer = factories.UserFactory()
    factories.MembershipFactory(project=project, user=reviewer, role="reviewer")
    other = factories.ProjectFactory()
    outsider = factories.UserFactory()
    factories.MembershipFactory(project=other, user=outsider, role="researcher")
    for url in urls:
        assert Client().get(url).status_code == 302  # to the login page
        for user in (users["a"], reviewer, outsider):
            assert browser(user).get(url).status_code == 404, (url, user)
        assert browser(researcher).get(url).status_code in (200, 302), url
    # an item of another project is not found through this one
    (foreign,) = factories.make_items(other, 1)
    url = reverse("project-item", args=[project.slug, foreign.pk])
    assert browser(researcher).get(url).status_code == 404


@pytest.mark.parametrize(
    "query, field",
    [
        ("agreement_max=abc", "agreement_max"),
        ("agreement_min=2", "agreement_min"),
        ("answers_min=-1", "answers_min"),
        ("gold_max=nan", "gold_max"),
        ("sort=bogus", "sort"),
        ("status=done", "status"),
        ("after=%%%", "after"),
        ("after=WzEsMl0", "after"),  # [1, 2]: a number where the queue order cursor holds one
        ("sort=external_id&after=WzEsMl0", "after"),
        ("verdict=agrees", "verdict"),
        ("judge=nobody", "judge"),
        ("page_size=0", "page_size"),
        ("page_size=x", "page_size"),
    ],
)
def test_a_bad_parameter_is_a_400_naming_it(db, researcher, query, field):
    project, _, _ = seeded_study(researcher)
    client = browser(researcher)
    response = client.get(reverse("project-items", args=[project.slug]) + "?" + query)
    if query == "after=WzEsMl0":  # a valid queue-order cursor (position 1, id 2)
        assert response.status_code == 200
        return
    assert response.status_code == 400, query
    assert f"<code>{field}</code>" in response.content.decode()
    export = client.get(reverse("project-items-export", args=[project.slug, "csv"]) + "?" + query)
    assert export.status_code in (200, 400)
    if not query.startswith(("after", "sort=external_id&after", "page_size")):
        assert export.status_code == 400


# --- finding items by reference --------------------------------------------------------------


def test_items_are_found_by_reference_and_external_id(db, researcher):
    project, items, _ = seeded_study(researcher)
    item = items["c2"]
    reference = item_reference(item_id=item.pk)
    client = browser(researcher)
    find = reverse("project-item-find", args=[project.slug])
    target = reverse("project-item", args=[project.slug, item.pk])
    for text in (reference, reference.lower(), f"  {reference} ", reference[1:], "c2"):
        response = client.get(find, {"ref": text})
        assert response.status_code == 302 and response["Location"] == target, text
    assert client.get(find, {"ref": "#ZZZZZZ"}).status_code == 404
    assert client.get(find, {"ref": "c9"}).status_code == 404
    # the table's search finds it by reference too
    rows = walk(project, item_filter_from_query({"q": reference}), 10)
    assert [r.id for r in rows] == [item.pk]
    page = client.get(target)
    assert reference in page.content.decode()


# --- the item page -----------------------------------------------------------------------------


def test_the_item_page_shows_every_coder_side_by_side(db, researcher):
    project, items, users = seeded_study(researcher)
    item = items["c1"]
    answer(item, users["a"], [2])  # a second version
    coder = ExternalCoder.objects.create(project=project, name="mturk", source="batch.csv")
    ExternalAnnotation.objects.create(
        coder=coder, item=item, answer={"sentences": [3], "none": False}
    )
    judge = judge_for(project)
    judge_answer(project, judge, item, [1], raw='{"sentences": [1]} <script>x</script>')
    failed = judge_for(project, "broken")
    JudgeResult.objects.create(
        item=item,
        judge=failed,
        prompt_version="v1",
        setting="sample",
        status="unparseable",
        raw="no idea",
        error="not JSON",
    )
    page = browser(researcher).get(reverse("project-item", args=[project.slug, item.pk]))
    html = page.content.decode()
    pseudonyms = Membership.objects.filter(project=project, role="annotator").values_list(
        "pseudonym", "user__username"
    )
    for pseudonym, username in pseudonyms:
        assert pseudonym in html and username not in html
    assert "ext:mturk" in html and judge.name in html and failed.name in html
    assert "sentence 3" in html  # the external coder's answer as the task type writes it
    assert "sentences 2, 3" in html  # b's answer: 0-based [1, 2], shown from 1
    assert "version 2 (current)" in html and "version 1" in html
    assert "&lt;script&gt;x&lt;/script&gt;" in html and "<script>x" not in html
    assert "not JSON" in html and "no idea" in html
    assert "correct against gold" in html and "differs from gold" in html


# --- export of a filter ------------------------------------------------------------------------


def test_the_export_holds_the_filters_rows_in_its_order(db, researcher):
    project, judge = _project_with(researcher, 30)
    Item.objects.filter(project=project, position__lte=3).update(group="=HYPERLINK(1)")
    client = browser(researcher)
    query = {"judge": judge.name, "verdict": "disagrees", "sort": "external_id", "descending": "1"}
    item_figures_ensure(project=project)
    expected = list(
        item_rows_all(project=project, item_filter=item_filter_from_query(query), chunk=7)
    )
    assert len(expected) == 15
    url = reverse("project-items-export", args=[project.slug, "jsonl"])
    response = client.get(url, query)
    assert response.status_code == 200 and response.streaming
    data = b"".join(response.streaming_content)
    check = check_export(data)  # ends with the exports' end line: a cut-off one is told apart
    assert check.complete and check.rows == len(expected), check
    assert not check_export(data[:-40]).complete
    lines = [json.loads(x) for x in export_body(data).decode().splitlines()]
    assert [x["external_id"] for x in lines] == [r.external_id for r in expected]
    assert {x["judge_verdict"] for x in lines} == {"disagrees"}
    assert {x["judge_humans_agreeing"] for x in lines} == {0.5}
    response = client.get(url.replace("jsonl", "csv"), query)
    data = b"".join(response.streaming_content)
    assert check_export(data).complete and check_export(data).rows == len(expected)
    table = list(csv.DictReader(io.StringIO(export_body(data).decode())))
    assert [r["external_id"] for r in table] == [r.external_id for r in expected]
    groups = {r["group"] for r in table}
    assert "'=HYPERLINK(1)" in groups and "=HYPERLINK(1)" not in groups
    # the whole project, unfiltered, is every item once
    everything = client.get(url)
    assert len(export_body(b"".join(everything.streaming_content)).splitlines()) == 30


def test_pages_cross_from_figures_to_items_without_any(db, researcher):
    """Items without agreement (fewer than two answers) come after the others, in both
    directions, and a page that ends on the last item with a figure leads on to them."""
    project, items, users = seeded_study(researcher)
    (lone,) = factories.make_items(project, 1, start=50)
    answer(lone, users["a"], [1])
    (empty,) = factories.make_items(project, 1, start=51)
    item_figures_refresh(project=project)
    for descending in ("", "1"):
        f = item_filter_from_query({"sort": "agreement", "descending": descending})
        ids = [r.id for r in walk(project, f, 1)]
        assert ids == [r.id for r in walk(project, f, 10)]
        assert len(ids) == 6 and ids[-2:] == sorted([lone.pk, empty.pk], reverse=bool(descending))


def test_the_item_page_names_fields_as_people_read_them():
    from studies.selectors.item_browser import field_label, readable

    assert [field_label(k) for k in ("evidence_id", "claim", "response_a", "_", 3)] == [
        "Evidence id",
        "Claim",
        "Response a",
        "_",
        "3",
    ]
    node = readable({"masked_evidence": 2, "evidence": [{"id": 1, "is_target": True}]})
    assert [label for label, _ in node["fields"]] == ["Masked evidence", "Evidence"]
    (entry,) = node["fields"][1][1]["entries"]
    assert entry["fields"] == [("Id", {"text": "1"}), ("Is target", {"text": "yes"})]


# --- a filter no index serves: a bounded search per page (issue 31) ---------------------------

SPAN_QUERIES = [
    "status=open&sort=external_id&descending=1",
    "status=complete&agreement_max=0.5&sort=agreement",
    "status=complete&agreement_max=0.5&sort=agreement&descending=1",
    "answers_max=1&sort=external_id&descending=1",
    "q=claim&status=complete",
    "judge={judge}&verdict=unjudged",
    "judge={judge}&verdict=disagrees&sort=judge&status=complete",
    "judge={judge}&verdict=agrees&sort=judge&descending=1&answers_min=2",
    "status=complete&gold_max=0.5&sort=gold",
]


def _mixed_project(researcher, n_items: int):
    """``_project_with``'s items (two answers, the second annotator differing on every other
    item, a judge answer on each) and as many again that nobody answered or judged."""
    project, judge = _project_with(researcher, n_items)
    factories.make_items(project, n_items, start=n_items)
    item_figures_refresh(project=project)
    return project, judge


@pytest.mark.parametrize("query", SPAN_QUERIES)
def test_a_bounded_search_pages_through_the_same_rows(db, researcher, query, monkeypatch):
    """With pages that look at only 3 items each (``SEARCH_SPAN``), following the pages gives
    the rows of the unbounded filter in the same order; a page that did not fill says how far
    it looked and leads on; the export reads every row too."""
    from studies.selectors import item_browser

    project, judge = _mixed_project(researcher, 12)
    params = dict(part.split("=") for part in query.format(judge=judge.name).split("&"))
    item_filter = item_filter_from_query(params)
    everything = [r.id for r in walk(project, item_filter, 4)]
    assert everything  # each filter keeps some of the items
    monkeypatch.setattr(item_browser, "SEARCH_SPAN", 3)
    rows, after, short = [], "", 0
    while True:
        page = item_page(project=project, item_filter=item_filter, after=after, page_size=4)
        assert len(page.rows) <= 4
        rows += [r.id for r in page.rows]
        short += bool(page.searched)
        if page.next_after is None:
            break
        after = page.next_after
    assert rows == everything
    assert short  # some page stopped looking before it was full
    exported = [r.id for r in item_rows_all(project=project, item_filter=item_filter, chunk=2)]
    assert exported == everything


def test_a_page_that_looked_far_enough_says_so(db, researcher, monkeypatch):
    from studies.selectors import item_browser

    project, _ = _mixed_project(researcher, 4)
    monkeypatch.setattr(item_browser, "SEARCH_SPAN", 3)
    client = browser(researcher)
    # the open items in queue order have their own index: no bound
    opened = client.get(reverse("project-items", args=[project.slug]) + "?status=open")
    assert len(opened.context["page"].rows) == 4 and not opened.context["page"].searched
    url = reverse("project-items", args=[project.slug]) + "?status=open&sort=external_id"
    response = client.get(url)  # the first three by external id are answered: none is open
    assert response.status_code == 200
    page = response.context["page"]
    assert page.rows == [] and page.searched == 3 and page.next_after
    text = response.content.decode()
    assert "looked at the next 3 items" in text and "None of these items matches" in text
    following = client.get(response.context["next_url"] and url + "&after=" + page.next_after)
    assert [r.external_id for r in following.context["page"].rows]  # the open ones, further on


@pytest.mark.parametrize("query", ["?answers_max=0", "?judge={judge}&verdict=unjudged"])
def test_a_bounded_search_costs_the_same_queries_at_any_size(db, researcher, query, monkeypatch):
    from studies.selectors import item_browser

    monkeypatch.setattr(item_browser, "SEARCH_SPAN", 5)
    counts = []
    for n_items in (10, 60):
        project, judge = _mixed_project(researcher, n_items)
        url = reverse("project-items", args=[project.slug]) + query.format(judge=judge.name)
        client = browser(researcher)
        counts.append(_page_queries(client, url))
        page = client.get(url).context["page"]
        assert page.searched and not page.rows  # the first items are all answered and judged
        counts.append(_page_queries(client, url + f"&after={page.next_after}"))
    assert len(set(counts)) == 1, counts
