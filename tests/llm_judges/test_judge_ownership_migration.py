"""The upgrade that makes judges belong to projects (llm_judges 0006–0008, studies 0002), run on
a database populated as the previous ``main`` stored it: shared judges linked to two projects,
with runs, results, a pre-selection and a keyed LLM endpoint among their parameters. Nothing is
lost, and each project ends up with its own judge carrying exactly its own results."""

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

BEFORE = [
    ("llm_judges", "0005_prompt_templates_budgets_presentation"),
    ("studies", "0001_initial"),
]


def migrate(targets):
    executor = MigrationExecutor(connection)
    executor.migrate(targets)
    executor.loader.build_graph()
    return executor.loader.project_state(targets).apps


def latest():
    executor = MigrationExecutor(connection)
    return executor.loader.graph.leaf_nodes()


def before():
    """Every other app at its latest migration; llm_judges and studies as the previous main."""
    moved = {app for app, _ in BEFORE}
    return [node for node in latest() if node[0] not in moved] + BEFORE


@pytest.fixture
def back_to_latest():
    """Whatever happens in the test, the database ends at the latest migrations (a test that
    stopped half-way would leave the tables of the old schema for the next tests)."""
    yield
    migrate(latest())


@pytest.mark.django_db(transaction=True)
def test_shared_judges_become_each_projects_own_with_their_results(back_to_latest):
    old = migrate(before())
    Project = old.get_model("projects", "Project")
    Item = old.get_model("annotation", "Item")
    Judge = old.get_model("llm_judges", "Judge")
    JudgeRun = old.get_model("llm_judges", "JudgeRun")
    JudgeResult = old.get_model("llm_judges", "JudgeResult")
    Preselection = old.get_model("llm_judges", "Preselection")
    StudyJudge = old.get_model("studies", "StudyJudge")

    projects = [
        Project.objects.create(slug=f"p{n}", name=f"P{n}", task_type="citation_recovery")
        for n in range(3)
    ]
    items = {
        p.slug: [
            Item.objects.create(
                project=p, external_id=f"{p.slug}-{k}", payload={}, prepared={}, position=k
            )
            for k in range(2)
        ]
        for p in projects
    }
    shared = Judge.objects.create(
        name="gpt",
        kind="llm",
        model="gpt-4",
        parameters={
            "base_url": "https://api.example.org/v1/",
            "api_key_env": "OPENAI_API_KEY",
            "temperature": 0.0,
        },
    )
    unused = Judge.objects.create(name="spare", kind="nli", model="/models/nli", parameters={})
    # Created by migration 0002; a transactional test run before this one may have emptied the
    # table, so it is made here as 0002 makes it when missing.
    builtin, _ = Judge.objects.get_or_create(
        name="minilm-similarity",
        defaults={"kind": "embedding", "model": "all-MiniLM-L6-v2", "prompt_version": "v1"},
    )
    for p in projects[:2]:
        StudyJudge.objects.create(project=p, judge=shared)
        run = JudgeRun.objects.create(
            judge=shared, project=p, prompt_version="v1", status="done", total=2
        )
        for item in items[p.slug]:
            JudgeResult.objects.create(
                item=item, judge=shared, prompt_version="v1", run=run, status="ok", answer={}
            )
    # The built-in judge ran on the third project only, which also pre-selects with it.
    JudgeResult.objects.create(
        item=items["p2"][0], judge=builtin, prompt_version="v1", status="ok", answer={}
    )
    Preselection.objects.create(
        project=projects[2], judge=builtin, prompt_version="v1", enabled_at=timezone.now()
    )

    migrate(latest())
    from llm_judges.models import Judge as Now
    from llm_judges.models import JudgeResult as Results
    from llm_judges.models import JudgeRun as Runs
    from llm_judges.models import ModelEndpoint
    from llm_judges.models import Preselection as Pre

    gpts = {j.project.slug: j for j in Now.objects.filter(name="gpt").select_related("project")}
    assert set(gpts) == {"p0", "p1"}
    assert gpts["p0"].pk == shared.pk  # the first project keeps the row
    for slug, judge in gpts.items():
        own = Results.objects.filter(judge=judge)
        assert sorted(own.values_list("item__external_id", flat=True)) == [
            f"{slug}-0",
            f"{slug}-1",
        ]
        assert list(Runs.objects.filter(judge=judge).values_list("project__slug", flat=True)) == [
            slug
        ]
        assert judge.parameters == {"temperature": 0.0}
        assert judge.endpoint.base_url == "https://api.example.org/v1"
        assert judge.endpoint.api_key_env == "OPENAI_API_KEY"
    endpoint = ModelEndpoint.objects.get()
    assert sorted(endpoint.projects.values_list("slug", flat=True)) == ["p0", "p1"]
    assert not endpoint.all_projects and not endpoint.allow_private_network
    assert Results.objects.count() == 5  # nothing lost

    minilm = Now.objects.get(name="minilm-similarity", project__slug="p2")
    assert Results.objects.get(item__external_id="p2-0").judge == minilm
    assert Pre.objects.get(project__slug="p2").judge == minilm
    # The catalogue keeps the built-in (recreated: its row went to p2) and the unused judge.
    catalogue = Now.objects.filter(project__isnull=True)
    assert sorted(catalogue.values_list("name", flat=True)) == ["minilm-similarity", "spare"]
    assert catalogue.get(name="spare").pk == unused.pk
