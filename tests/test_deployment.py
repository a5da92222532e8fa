"""docker-compose.yml has no engine to run on here, so its production shape is checked by reading."""

import re

import yaml

from tests.conftest import REPO


def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_compose_runs_postgres_redis_web_and_a_worker_each_with_a_health_check():
    services = compose()["services"]
    assert set(services) == {"postgres", "redis", "web", "worker"}
    for name, service in services.items():
        assert "test" in service["healthcheck"], name


def test_web_and_worker_wait_for_healthy_services_and_share_the_environment():
    services = compose()["services"]
    for name in ("web", "worker"):
        service = services[name]
        assert service["depends_on"] == {
            "postgres": {"condition": "service_healthy"},
            "redis": {"condition": "service_healthy"},
        }
        env = service["environment"]
        assert env["DJANGO_DEBUG"] == "false"
        assert (
            env["DATABASE_URL"].startswith("postgres://")
            and "@postgres:5432/" in env["DATABASE_URL"]
        )
        assert env["REDIS_URL"] == "redis://redis:6379/0"
        assert "DJANGO_SECRET_KEY" in env
    assert "gunicorn config.wsgi:application" in " ".join(services["web"]["command"].split())
    assert services["worker"]["command"][:4] == ["celery", "-A", "config", "worker"]


def test_the_web_health_check_hits_a_url_the_app_serves(client, db):
    test = " ".join(compose()["services"]["web"]["healthcheck"]["test"])
    path = re.search(r"127\.0\.0\.1:8000(/\S*?)'", test).group(1)
    assert client.get(path).status_code == 200


def test_the_dockerfile_installs_the_project_and_collects_static_files():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "FROM python:3.11" in dockerfile
    assert "collectstatic" in dockerfile and "gunicorn" in dockerfile
