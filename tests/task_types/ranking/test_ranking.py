"""Ranking with ties: import (JSONL, CSV, ReproHum sheet + mapping), blinding, validation, export."""

import csv
import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from annotation import services, task_types
from annotation.models import Assignment, Item
from metrics.ranking import mean_average_rank
from studies.services.exports import export_stream
from studies.services.imports import ImportFailed, import_items
from task_types.ranking.ranks import is_standard_competition
from task_types.ranking.serializers import DEFAULT_CRITERIA
from task_types.ranking.task import display_order
from tests import factories
from tests.conftest import REPO, client_for

TASK = task_types.get("ranking")
DATA = REPO / "data" / "explanation-ranking"
RECORDS = [json.loads(line) for line in (DATA / "explanations.jsonl").read_text().splitlines()]
SYSTEMS = ["gpt4", "gpt35", "llama2-70b"]
CRITERIA = [
    {"name": "Coverage", "definition": "Covers the salient points.", "examples": []},
    {"name": "Overall", "definition": "Overall quality.", "examples": []},
]


@pytest.fixture
def project(db, researcher):
    project = factories.ProjectFactory(
        task_type="ranking",
        config={"criteria": CRITERIA, "systems": SYSTEMS, "seed": 5},
        annotators_per_item=3,
    )
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    return project


def jsonl(records) -> io.BytesIO:
    return io.BytesIO("".join(json.dumps(r) + "\n" for r in records).encode())


def keys_of(value):
    if isinstance(value, dict):
        for key, inner in value.items():
            yield key
            yield from keys_of(inner)
    elif isinstance(value, list):
        for inner in value:
            yield from keys_of(inner)


def annotator_in(project):
    user = factories.UserFactory()
    factories.MembershipFactory(project=project, user=user, role="annotator")
    return user


def ranks_for(item, by_system: dict[str, dict[str, int]], order=None) -> dict:
    key_of = {
        o["system"]: key
        for key, o in zip(item.prepared["keys"], item.payload["outputs"], strict=True)
    }
    return {
        "order": order or list(item.prepared["keys"]),
        "ranks": {c: {key_of[s]: r for s, r in ranks.items()} for c, ranks in by_system.items()},
    }


# --- import ----------------------------------------------------------------------------------------


def test_importing_the_explanations_gives_one_item_per_claim_with_opaque_keys(project):
    report = import_items(
        project=project, stream=open(DATA / "explanations.jsonl", "rb"), fmt="jsonl"
    )
    assert report.created == 40
    items = list(Item.objects.filter(project=project))
    assert all(len(set(i.prepared["keys"])) == 3 for i in items)
    all_keys = [k for i in items for k in i.prepared["keys"]]
    assert len(set(all_keys)) == len(all_keys)  # keys say nothing across items
    assert [o["system"] for o in items[0].payload["outputs"]] == SYSTEMS


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda r: r.update(outputs=r["outputs"][:1]),
            r"line 2, field 'outputs'.*2 to 9 outputs \(k = 1\)",
        ),
        (
            lambda r: r["outputs"][1].update(system="gpt5"),
            r"line 2, field 'outputs.1.system'.*Unknown system 'gpt5'",
        ),
        (
            lambda r: r["outputs"][2].update(system="gpt4"),
            r"line 2, field 'outputs'.*'gpt4' appears twice",
        ),
        (lambda r: r["outputs"][0].update(text=""), r"line 2, field 'outputs.0.text'"),
    ],
)
def test_bad_records_name_the_line_and_field_and_import_nothing(project, change, message):
    records = json.loads(json.dumps(RECORDS[:3]))
    change(records[1])
    with pytest.raises(ImportFailed, match=message):
        import_items(project=project, stream=jsonl(records), fmt="jsonl")
    assert not Item.objects.exists()


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"criteria": []}, "criteria: A ranking project needs at least one criterion"),
        ({"criteria": [{"name": "Coverage"}]}, r"criteria.0.definition: This field is required"),
        ({"criteria": CRITERIA + CRITERIA[:1]}, "criteria: Criterion 'Coverage' appears twice"),
    ],
)
def test_missing_or_broken_criteria_refuse_the_import(db, config, message):
    project = factories.ProjectFactory(task_type="ranking", config=config)
    with pytest.raises(
        ImportFailed, match=f"Nothing imported. The project configuration is invalid: {message}"
    ):
        import_items(project=project, stream=jsonl(RECORDS[:2]), fmt="jsonl")
    assert not Item.objects.exists()


def test_without_configured_criteria_the_four_of_atanasova_et_al_apply(db):
    assert (
        [c["name"] for c in TASK.validate_config({})["criteria"]]
        == [c["name"] for c in DEFAULT_CRITERIA]
        == ["Coverage", "Non-redundancy", "Non-contradiction", "Overall"]
    )


def test_the_reprohum_sheet_with_its_per_row_mapping_recovers_every_system(project):
    mapping = (DATA / "reprohum_mapping.csv").read_text()
    with open(DATA / "reprohum_sheet.csv", "rb") as stream:
        report = import_items(
            project=project, stream=stream, fmt="reprohum", options={"mapping": mapping}
        )
    assert report.created == 10
    expected = {r["id"]: {o["system"]: o["text"] for o in r["outputs"]} for r in RECORDS[:10]}
    for item in Item.objects.filter(project=project):
        assert {o["system"]: o["text"] for o in item.payload["outputs"]} == expected[
            item.external_id
        ]
        assert item.payload["claim"] and item.payload["label"] in {"true", "false", "half-true"}
    # The sheet really was shuffled per row: the column order of the systems varies.
    orders = {tuple(o["system"] for o in i.payload["outputs"]) for i in Item.objects.all()}
    assert len(orders) > 1


SHEET = "id,claim,label,justification 1,justification 2,extra\nr1,A claim.,false,First text.,Second text.,x\n"


@pytest.mark.parametrize(
    "mapping",
    [
        "column,system\njustification 1,gpt35\njustification 2,gpt4\n",
        '{"justification 1": "gpt35", "justification 2": "gpt4"}',
        '{"r1": {"justification 1": "gpt35", "justification 2": "gpt4"}}',
    ],
)
def test_a_common_mapping_as_csv_or_json_also_works(project, mapping):
    import_items(
        project=project,
        stream=io.BytesIO(SHEET.encode()),
        fmt="reprohum",
        options={"mapping": mapping},
    )
    assert Item.objects.get().payload["outputs"] == [
        {"system": "gpt35", "text": "First text."},
        {"system": "gpt4", "text": "Second text."},
    ]


@pytest.mark.parametrize(
    ("mapping", "message"),
    [
        (None, "needs a mapping file"),
        (
            "column,system\njustification 1,gpt35\njustification 2,gpt5\n",
            r"line 2, field 'outputs.1.system'.*'gpt5'",
        ),
        (
            "column,system\njustification 1,gpt35\n",
            "line 2: column 'justification 2' has no system",
        ),
        (
            "id,column,system\nr9,justification 1,gpt35\nr9,justification 2,gpt4\n",
            "line 2: the mapping file has no entry for row 'r1'",
        ),
        (
            "column,system\njustification 1,gpt35\njustification 7,gpt4\n",
            "mapping names column 'justification 7'",
        ),
        (
            "column,system\njustification 1,gpt35\njustification 1,gpt4\n",
            "mapping file line 3: column 'justification 1' is mapped twice",
        ),
        ("col,sys\n", "needs the columns column and system"),
        ('{"justification 1": "gpt35",\n "x": }', r"not valid JSON \(.*line 2, column 7\)"),
    ],
)
def test_bad_reprohum_mappings_are_refused_with_the_line(project, mapping, message):
    options = None if mapping is None else {"mapping": mapping}
    with pytest.raises(ImportFailed, match=message):
        import_items(
            project=project, stream=io.BytesIO(SHEET.encode()), fmt="reprohum", options=options
        )
    assert not Item.objects.exists()


def test_the_import_command_passes_the_mapping_file_and_other_formats_refuse_it(project, tmp_path):
    call_command(
        "import_items",
        str(DATA / "reprohum_sheet.csv"),
        project=project.slug,
        fmt="reprohum",
        mapping=str(DATA / "reprohum_mapping.csv"),
    )
    assert Item.objects.count() == 10
    with pytest.raises(CommandError, match="The jsonl format takes no mapping option"):
        call_command(
            "import_items",
            str(DATA / "explanations.jsonl"),
            project=project.slug,
            fmt="jsonl",
            mapping=str(DATA / "reprohum_mapping.csv"),
        )
    with pytest.raises(CommandError, match="No such mapping file"):
        call_command(
            "import_items",
            str(DATA / "reprohum_sheet.csv"),
            project=project.slug,
            fmt="reprohum",
            mapping=str(tmp_path / "missing.csv"),
        )
    assert Item.objects.count() == 10


def test_the_project_page_offers_a_mapping_file_for_the_reprohum_format(project, researcher):
    page = Client()
    page.force_login(researcher)
    html = page.get(f"/p/{project.slug}/").content.decode()
    assert '<option value="reprohum">reprohum</option>' in html
    assert 'Mapping file <span class="muted">(reprohum, label-studio)</span>' in html


@pytest.mark.django_db(transaction=True)  # the job is queued on commit
def test_the_upload_api_takes_the_mapping_file_of_the_reprohum_format(
    researcher_client, researcher, celery_eager
):
    project = factories.ProjectFactory(task_type="ranking", config={})
    factories.MembershipFactory(project=project, user=researcher, role="researcher")
    sheet = io.BytesIO((DATA / "reprohum_sheet.csv").read_bytes())
    sheet.name = "sheet.csv"
    mapping = io.BytesIO((DATA / "reprohum_mapping.csv").read_bytes())
    mapping.name = "mapping.csv"
    response = researcher_client.post(
        f"/api/projects/{project.slug}/import/",
        {"file": sheet, "format": "reprohum", "mapping": mapping},
    )
    assert response.status_code == 201, response.data
    assert response.data["created"] == Item.objects.filter(project=project).count() > 0


def test_csv_rows_with_one_column_per_system_import(project):
    text = "id,claim,label,system:gpt4,system:gpt35\nc1,A claim.,true,Text one.,Text two.\n"
    import_items(project=project, stream=io.BytesIO(text.encode()), fmt="csv")
    assert Item.objects.get().payload["outputs"] == [
        {"system": "gpt4", "text": "Text one."},
        {"system": "gpt35", "text": "Text two."},
    ]


# --- blinding --------------------------------------------------------------------------------------


def test_each_annotator_sees_a_stable_order_of_their_own_and_never_a_system_name(project):
    import_items(project=project, stream=jsonl(RECORDS[:1]), fmt="jsonl")
    item = Item.objects.get()
    annotators = [annotator_in(project) for _ in range(3)]
    seen_orders = set()
    for user in annotators:
        client = client_for(user)
        response = client.post(f"/api/projects/{project.slug}/next/")
        assert response.status_code == 200
        text = json.dumps(response.data)
        for system in SYSTEMS:
            assert system not in text
        assert not set(keys_of(response.data)) & {
            "system",
            "systems",
            "order_seed",
            "payload",
            "prepared",
        }
        shown = [o["key"] for o in response.data["item"]["outputs"]]
        again = client.get(f"/api/assignments/{response.data['id']}/").data["item"]["outputs"]
        assert [o["key"] for o in again] == shown  # stable for this annotator
        index = {k: i for i, k in enumerate(item.prepared["keys"])}
        # The item's order (the judges'), or reversed: counterbalanced per annotator.
        presentation = Assignment.objects.get(pk=response.data["id"]).presentation
        expected = display_order(item)[:: -1 if presentation["reversed"] else 1]
        assert [index[k] for k in shown] == expected == [index[k] for k in presentation["order"]]
        seen_orders.add(tuple(shown))
        page = Client()
        page.force_login(user)
        html = page.get(f"/p/{project.slug}/annotate/").content.decode()
        for system in SYSTEMS:
            assert system not in html
        assert '"seed"' not in html and "Covers the salient points." in html
    orders = {tuple(display_order(item, annotator_id)) for annotator_id in range(1, 40)}
    assert len(orders) == 6  # every permutation of three occurs across annotators


# --- answers ---------------------------------------------------------------------------------------


def validate(item, answer):
    serializer = TASK.answer_serializer(data=answer, context={"item": item})
    ok = serializer.is_valid()
    return ok, serializer.validated_data if ok else serializer.errors


@pytest.mark.parametrize("ranks", [(1, 1, 3), (1, 2, 2), (1, 1, 1), (3, 1, 2), (2, 1, 2)])
def test_standard_competition_rankings_with_ties_are_accepted(project, ranks):
    import_items(project=project, stream=jsonl(RECORDS[:1]), fmt="jsonl")
    item = Item.objects.get()
    by_system = dict(zip(SYSTEMS, ranks, strict=True))
    ok, clean = validate(item, ranks_for(item, {"Coverage": by_system, "Overall": by_system}))
    assert ok, clean


@pytest.mark.parametrize(
    ("coverage", "message"),
    [
        (
            {"gpt4": 1, "gpt35": 1, "llama2-70b": 2},
            "Ranks 1, 1, 2 do not follow this project's tie convention",
        ),
        ({"gpt4": 1, "gpt35": 2, "llama2-70b": 4}, "Ranks run from 1 to 3"),
        ({"gpt4": 0, "gpt35": 1, "llama2-70b": 2}, "Ranks run from 1 to 3"),
        ({"gpt4": 1, "gpt35": 2}, "has no rank"),
        ({"gpt4": 2, "gpt35": 2, "llama2-70b": 2}, "e.g. 1, 1, 3; here 1, 1, 1"),
    ],
)
def test_incomplete_or_inconsistent_rankings_are_refused_per_criterion(project, coverage, message):
    import_items(project=project, stream=jsonl(RECORDS[:1]), fmt="jsonl")
    item = Item.objects.get()
    ok, errors = validate(
        item,
        ranks_for(
            item, {"Coverage": coverage, "Overall": {"gpt4": 1, "gpt35": 2, "llama2-70b": 3}}
        ),
    )
    assert not ok and list(errors["ranks"]) == ["Coverage"]
    assert message in str(errors["ranks"]["Coverage"])


@pytest.mark.parametrize(
    ("convention", "accepted", "refused"),
    [
        ("competition", [(1, 1, 3), (1, 2, 2)], [(1, 1, 2), (2, 2, 3)]),
        ("dense", [(1, 1, 2), (1, 2, 2), (1, 2, 3)], [(1, 1, 3), (2, 2, 3)]),
        ("free", [(1, 1, 2), (1, 1, 3), (2, 2, 3), (3, 3, 3)], []),
    ],
)
def test_the_tie_convention_is_the_projects_choice(project, convention, accepted, refused):
    project.config = {**project.config, "tie_convention": convention}
    project.save()
    import_items(project=project, stream=jsonl(RECORDS[:1]), fmt="jsonl")
    item = Item.objects.get()
    for ranks in accepted + refused:
        by_system = dict(zip(SYSTEMS, ranks, strict=True))
        ok, errors = validate(item, ranks_for(item, {"Coverage": by_system, "Overall": by_system}))
        assert ok == (ranks in accepted), (ranks, errors)
        if not ok:
            assert "tie convention" in str(errors["ranks"]["Coverage"])


def test_an_unknown_tie_convention_is_refused():
    with pytest.raises(Exception) as refused:
        TASK.validate_config({"tie_convention": "olympic"})
    assert "tie_convention" in str(refused.value) or "olympic" in str(refused.value)


def test_a_missing_criterion_an_unknown_criterion_or_a_wrong_order_is_refused(project):
    import_items(project=project, stream=jsonl(RECORDS[:1]), fmt="jsonl")
    item = Item.objects.get()
    full = {"gpt4": 1, "gpt35": 2, "llama2-70b": 3}
    ok, errors = validate(item, ranks_for(item, {"Coverage": full}))
    assert not ok and "output A, B, C has no rank" in str(errors["ranks"]["Overall"])
    ok, errors = validate(item, ranks_for(item, {"Coverage": full, "Overall": full, "Style": full}))
    assert not ok and "Unknown criterion 'Style'" in str(errors["ranks"])
    answer = ranks_for(item, {"Coverage": full, "Overall": full})
    answer["order"] = answer["order"][:2] + answer["order"][:1]
    ok, errors = validate(item, answer)
    assert not ok and "every output" in str(errors["order"])


def test_is_standard_competition_matches_the_agreement_modules_conversion():
    from metrics.ranking import to_standard_competition

    for ranks in ([1, 1, 3], [1, 1, 2], [2, 2, 2], [1, 1, 1], [3, 1, 2], [1, 3, 3], [1, 2, 2, 4]):
        assert is_standard_competition(ranks) == (to_standard_competition(ranks) == ranks)


# --- export ----------------------------------------------------------------------------------------


def test_the_export_reattaches_systems_one_row_per_criterion_and_system_and_feeds_mar(project):
    import_items(project=project, stream=jsonl(RECORDS[:2]), fmt="jsonl")
    alice, bob = annotator_in(project), annotator_in(project)
    plans = {
        alice: {
            "Coverage": {"gpt4": 1, "gpt35": 1, "llama2-70b": 3},
            "Overall": {"gpt4": 2, "gpt35": 1, "llama2-70b": 3},
        },
        bob: {
            "Coverage": {"gpt4": 2, "gpt35": 3, "llama2-70b": 1},
            "Overall": {"gpt4": 1, "gpt35": 2, "llama2-70b": 2},
        },
    }
    for user, plan in plans.items():
        while (assignment := services.assignment_next(project=project, annotator=user)) is not None:
            item = assignment.item
            shown = assignment.presentation["order"]
            services.annotation_submit(
                assignment=assignment, answer=ranks_for(item, plan, order=shown)
            )
    rows = [
        json.loads(line)
        for line in "".join(export_stream(project=project, fmt="jsonl")).splitlines()
    ]
    assert len(rows) == 2 * 2 * 2 * 3  # items × annotators × criteria × systems
    first = [r for r in rows if r["item_id"] == RECORDS[0]["id"] and r["criterion"] == "Coverage"]
    assert {
        (r["system"], r["rank"], r["rank_dense"])
        for r in first
        if r["annotator"] == rows[0]["annotator"]
    } in (
        {("gpt4", 1, 1), ("gpt35", 1, 1), ("llama2-70b", 3, 2)},
        {("gpt4", 2, 2), ("gpt35", 3, 3), ("llama2-70b", 1, 1)},
    )
    assert all(r["shown_as"] == f"Output {'ABC'[r['shown_position'] - 1]}" for r in rows)
    coverage = mean_average_rank(
        (r["annotator"], r["item_id"], r["system"], r["rank"])
        for r in rows
        if r["criterion"] == "Coverage"
    )
    assert coverage.overall == {"gpt4": 1.5, "gpt35": 2.0, "llama2-70b": 2.0}
    text = "".join(export_stream(project=project, fmt="csv"))
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert len(parsed) == len(rows) and parsed[0]["criterion"] in {"Coverage", "Overall"}


def test_the_demo_project_loads_forty_claims_with_three_explanations_each(db, researcher):
    from task_types.ranking import demo

    annotators = [factories.UserFactory() for _ in range(3)]
    assert "40 items created" in demo.create(researcher=researcher, annotators=annotators)
    assert all(len(i.payload["outputs"]) == 3 for i in Item.objects.all())


def test_the_agreement_key_compares_ranks_not_the_order_each_annotator_saw(project):
    import_items(project=project, stream=jsonl(RECORDS[:1]), fmt="jsonl")
    item = Item.objects.get()
    plan = {
        "Coverage": {"gpt4": 1, "gpt35": 1, "llama2-70b": 3},
        "Overall": {"gpt4": 1, "gpt35": 2, "llama2-70b": 3},
    }
    one = validate(item, ranks_for(item, plan))[1]
    other = validate(item, ranks_for(item, plan, order=list(reversed(item.prepared["keys"]))))[1]
    assert one != other and TASK.agreement_key(one) == TASK.agreement_key(other)
    plan["Overall"]["gpt35"] = 3
    assert TASK.agreement_key(validate(item, ranks_for(item, plan))[1]) != TASK.agreement_key(one)


def test_annotators_who_gave_the_same_ranks_in_different_orders_are_not_a_dispute(project):
    from annotation.review import disputed_items

    import_items(project=project, stream=jsonl(RECORDS[:1]), fmt="jsonl")
    plan = {
        "Coverage": {"gpt4": 1, "gpt35": 1, "llama2-70b": 3},
        "Overall": {"gpt4": 2, "gpt35": 1, "llama2-70b": 3},
    }
    orders = []
    for _ in range(2):
        user = annotator_in(project)
        assignment = services.assignment_next(project=project, annotator=user)
        item = assignment.item
        shown = assignment.presentation["order"]
        shown = shown if shown not in orders else list(reversed(shown))
        orders.append(shown)
        services.annotation_submit(assignment=assignment, answer=ranks_for(item, plan, order=shown))
    assert orders[0] != orders[1]
    assert disputed_items(project=project) == []
    third = annotator_in(project)
    assignment = services.assignment_next(project=project, annotator=third)
    plan["Overall"] = {"gpt4": 3, "gpt35": 1, "llama2-70b": 2}
    services.annotation_submit(assignment=assignment, answer=ranks_for(assignment.item, plan))
    assert [d["distinct"] for d in disputed_items(project=project)] == [2]


def test_a_judge_ranking_exports_one_row_per_criterion_and_system_like_a_human(project):
    """Judge rows come from the same ``export_rows`` hook; a failed item is one row, no ranks."""
    from llm_judges import prompts
    from llm_judges.models import Judge, JudgeResult

    import_items(project=project, stream=jsonl(RECORDS[:2]), fmt="jsonl")
    answered, failed = Item.objects.filter(project=project).order_by("position")
    reply = json.dumps({"Coverage": {"A": 1, "B": 3, "C": 2}, "Overall": {"A": 2, "B": 1, "C": 2}})
    answer = prompts.get("ranking").parse(reply, answered)
    judge = Judge.objects.create(project=project, name="ranker", kind="llm", model="m")
    JudgeResult.objects.create(
        item=answered, judge=judge, prompt_version="v1", status="ok", answer=answer
    )
    JudgeResult.objects.create(
        item=failed, judge=judge, prompt_version="v1", status="failed", error="HTTP 500: boom"
    )
    text = "".join(export_stream(project=project, fmt="jsonl", coders="judges"))
    rows = [json.loads(line) for line in text.splitlines()]
    assert len(rows) == 2 * 3 + 1  # criteria × systems, then the failed item
    assert len({tuple(r) for r in rows}) == 1
    ranks = {(r["criterion"], r["system"]): r["rank"] for r in rows[:6]}
    letters = dict(zip(answer["order"], "ABC", strict=True))  # the order the judge was shown
    outputs = answered.payload["outputs"]
    systems = dict(zip(answered.prepared["keys"], (o["system"] for o in outputs), strict=True))
    given = {"Coverage": {"A": 1, "B": 3, "C": 2}, "Overall": {"A": 2, "B": 1, "C": 2}}
    assert ranks == {
        (c, systems[key]): given[c][letters[key]]
        for c in ("Coverage", "Overall")
        for key in answer["order"]
    }
    assert all(r["coder"] == "ranker" and r["judge_outcome"] == "ok" for r in rows[:6])
    last = rows[-1]
    assert (last["item_id"], last["judge_outcome"], last["judge_message"]) == (
        failed.external_id,
        "failed",
        "HTTP 500: boom",
    )
    assert last["criterion"] is None and last["system"] is None and last["rank"] is None
