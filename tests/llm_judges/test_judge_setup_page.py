"""The judges page sets up the project's own judges: add one (an LLM judge on an endpoint staff
opened to the project), copy one from the catalogue, choose the endpoint of one that has not run."""

import pytest
from django.test import Client

from llm_judges.models import Judge, ModelEndpoint
from tests import factories


@pytest.fixture
def page_client(researcher):
    client = Client()
    client.force_login(researcher)
    return client


@pytest.fixture
def endpoint(project):
    endpoint = ModelEndpoint.objects.create(name="team-vllm", base_url="https://vllm.example/v1")
    endpoint.projects.add(project)
    return endpoint


def post(client, project, **data):
    return client.post(f"/p/{project.slug}/judges/", data)


def test_a_researcher_adds_an_llm_judge_on_an_endpoint_open_to_the_project(
    page_client, project, endpoint
):
    closed = ModelEndpoint.objects.create(name="other-team", base_url="https://o.example/v1")
    page = page_client.get(f"/p/{project.slug}/judges/").content.decode()
    assert "team-vllm" in page and "other-team" not in page
    response = post(
        page_client,
        project,
        **{
            "action": "add",
            "add-name": "gpt-j",
            "add-kind": "llm",
            "add-model": "gpt-4o",
            "add-endpoint": endpoint.pk,
            "add-parameters": '{"temperature": 0.2}',
        },
    )
    assert response.status_code == 302
    judge = Judge.objects.get(project=project, name="gpt-j")
    assert judge.endpoint == endpoint and judge.parameters["temperature"] == 0.2
    refused = post(
        page_client,
        project,
        **{
            "action": "add",
            "add-name": "sneaky",
            "add-kind": "llm",
            "add-model": "m",
            "add-endpoint": closed.pk,
        },
    )
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()
    bad = post(
        page_client,
        project,
        **{
            "action": "add",
            "add-name": "keyed",
            "add-kind": "llm",
            "add-model": "m",
            "add-endpoint": endpoint.pk,
            "add-parameters": '{"base_url": "http://evil/v1"}',
        },
    )
    assert bad.status_code == 200 and "model endpoint staff set up" in bad.content.decode()
    assert set(Judge.objects.filter(project=project).values_list("name", flat=True)) == {"gpt-j"}


def test_a_researcher_copies_the_catalogue_judge_then_a_second_name_is_refused(
    page_client, project
):
    catalogue = Judge.objects.get(project=None, name="minilm-similarity")
    response = post(page_client, project, **{"action": "copy", "copy-source": catalogue.pk})
    assert response.status_code == 302
    copy = Judge.objects.get(project=project, name="minilm-similarity")
    assert copy.pk != catalogue.pk and copy.parameters == catalogue.parameters
    again = post(page_client, project, **{"action": "copy", "copy-source": catalogue.pk})
    assert again.status_code == 200 and "already" in again.content.decode()


def test_an_llm_judge_without_an_endpoint_gets_one_until_it_has_run(page_client, project, endpoint):
    from llm_judges import services
    from llm_judges.models import JudgeRun

    judge = services.judge_create(project=project, name="bundled", kind="llm", model="m")
    page = page_client.get(f"/p/{project.slug}/judges/").content.decode()
    assert "none: choose one below" in page
    response = post(
        page_client,
        project,
        **{"action": "endpoint", "ep-judge": judge.pk, "ep-endpoint": endpoint.pk},
    )
    assert response.status_code == 302
    judge.refresh_from_db()
    assert judge.endpoint == endpoint
    JudgeRun.objects.create(judge=judge, project=project, prompt_version="v1", status="done")
    other = ModelEndpoint.objects.create(name="second", base_url="https://s.example/v1")
    other.projects.add(project)
    refused = post(
        page_client,
        project,
        **{"action": "endpoint", "ep-judge": judge.pk, "ep-endpoint": other.pk},
    )
    # A judge that has run is no longer offered, and the service refuses it too.
    assert refused.status_code == 200 and 'id="judge-endpoint"' not in refused.content.decode()
    with pytest.raises(services.JudgeError, match="has run"):
        services.judge_endpoint_set(judge=judge, endpoint=other)
    judge.refresh_from_db()
    assert judge.endpoint == endpoint


def test_the_judges_page_answers_404_to_a_researcher_of_another_project(project, endpoint):
    stranger = factories.UserFactory(username=factories.unique("stranger"))
    other = factories.ProjectFactory(slug=factories.unique("other"))
    factories.MembershipFactory(project=other, user=stranger, role="researcher")
    client = Client()
    client.force_login(stranger)
    assert client.get(f"/p/{project.slug}/judges/").status_code == 404
    catalogue = Judge.objects.get(project=None, name="minilm-similarity")
    response = client.post(
        f"/p/{project.slug}/judges/", {"action": "copy", "copy-source": catalogue.pk}
    )
    assert response.status_code == 404
    assert not Judge.objects.filter(project=project).exists()


def test_a_judge_of_a_kind_the_task_type_cannot_run_is_not_offered_nor_made(researcher, db):
    """Found by the outside probe: the page said "ready" for an embedding judge on a ranking
    project, which could never run."""
    from llm_judges.services import JudgeError, judge_create

    ranking = factories.ProjectFactory(task_type="ranking")
    factories.MembershipFactory(project=ranking, user=researcher, role="researcher")
    client = Client()
    client.force_login(researcher)
    page = client.get(f"/p/{ranking.slug}/judges/").content.decode()
    assert 'value="llm"' in page and 'value="embedding"' not in page and 'value="nli"' not in page
    refused = post(
        client,
        ranking,
        **{"action": "add", "add-name": "mini", "add-kind": "embedding", "add-model": "m"},
    )
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()
    with pytest.raises(JudgeError, match="ranking items cannot be judged by") as error:
        judge_create(project=ranking, name="mini", kind="embedding", model="all-MiniLM-L6-v2")
    assert error.value.field == "kind"
    catalogue = Judge.objects.get(project=None, name="minilm-similarity")
    with pytest.raises(JudgeError, match="cannot be judged by"):
        from llm_judges.services import judge_copy

        judge_copy(judge=catalogue, project=ranking)
    assert not Judge.objects.filter(project=ranking).exists()
