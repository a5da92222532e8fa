import pytest

from config.celery import app as celery_app
from llm_judges import services
from tests.llm_judges.stub_llm import StubLLM

API_KEY_ENV = "STUB_LLM_API_KEY"
API_KEY = "sk-test-not-a-secret"


@pytest.fixture(autouse=True)
def eager_celery():
    """Tasks run in-process unless a test starts a real worker (CI sets REDIS_URL, which turns
    eager mode off for the whole suite)."""
    previous = celery_app.conf.task_always_eager
    celery_app.conf.task_always_eager = True
    yield
    celery_app.conf.task_always_eager = previous


@pytest.fixture
def stub():
    with StubLLM() as server:
        yield server


@pytest.fixture
def api_key(monkeypatch):
    monkeypatch.setenv(API_KEY_ENV, API_KEY)
    return API_KEY


def stub_endpoint(stub, project, *, api_key_env=API_KEY_ENV, name=None):
    """A model endpoint staff set up for the stub server (on 127.0.0.1: private addresses
    allowed), open to ``project``."""
    from llm_judges.models import ModelEndpoint

    endpoint, _ = ModelEndpoint.objects.update_or_create(
        name=name or f"stub-{stub.url.rsplit(':', 1)[-1].split('/')[0]}-{api_key_env or 'nokey'}",
        defaults={
            "base_url": stub.url,
            "api_key_env": api_key_env,
            "allow_private_network": True,
        },
    )
    endpoint.projects.add(project)
    return endpoint


def make_llm_judge(stub, project, name="stub-llm", api_key_env=API_KEY_ENV, **parameters):
    """An LLM judge of ``project`` calling the stub server through a staff endpoint."""
    defaults = {
        "timeout": 5,
        "concurrency": 1,
        "max_attempts": 3,
        "backoff_base": 0,
        "max_tokens": 64,
    }
    defaults.update(parameters)
    return services.judge_create(
        project=project,
        name=name,
        kind="llm",
        model="stub-model",
        endpoint=stub_endpoint(stub, project, api_key_env=api_key_env),
        parameters=defaults,
    )


def start(judge, project, capture, **kwargs):
    """Start a run and execute its on-commit enqueue (the test's transaction never commits)."""
    with capture(execute=True):
        run = services.judge_run_start(judge=judge, project=project, **kwargs)
    run.refresh_from_db()
    return run
