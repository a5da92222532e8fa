"""docker-compose.yml has no engine to run on here, so its production shape is checked by reading."""

import json
import os
import re
import runpy
import shutil
import subprocess
import sys

import yaml

from tests.conftest import REPO, require


def compose() -> dict:
    return yaml.safe_load((REPO / "docker-compose.yml").read_text())


def test_compose_runs_a_proxy_postgres_redis_web_a_worker_and_beat_each_with_a_health_check():
    services = compose()["services"]
    assert set(services) == {"proxy", "postgres", "redis", "web", "worker", "beat"}
    for name, service in services.items():
        assert "test" in service["healthcheck"], name
    # Exactly one scheduler of the periodic tasks (lost judge runs, upload purges).
    assert services["beat"]["command"][:4] == ["celery", "-A", "config", "beat"]


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
    assert "gunicorn -c config/gunicorn.py config.wsgi:application" in " ".join(
        services["web"]["command"].split()
    )
    assert services["worker"]["command"][:4] == ["celery", "-A", "config", "worker"]


def test_the_web_health_check_hits_a_url_the_app_serves(client, db):
    test = " ".join(compose()["services"]["web"]["healthcheck"]["test"])
    path = re.search(r"127\.0\.0\.1:8000(/\S*?)'", test).group(1)
    assert client.get(path).status_code == 200


def test_the_dockerfile_installs_the_project_and_collects_static_files():
    dockerfile = (REPO / "Dockerfile").read_text()
    assert "FROM python:3.11" in dockerfile
    assert "collectstatic" in dockerfile and "gunicorn" in dockerfile


# --- the reverse proxy in front of gunicorn (issue 14) -------------------------------------------


def caddyfile() -> str:
    return (REPO / "deploy" / "Caddyfile").read_text()


def test_only_the_proxy_is_published_and_it_waits_for_a_healthy_web_service():
    services = compose()["services"]
    proxy = services["proxy"]
    assert proxy["image"].startswith("caddy:2")
    assert any(port.endswith(":80") for port in proxy["ports"])
    assert "./deploy/Caddyfile:/etc/caddy/Caddyfile:ro" in proxy["volumes"]
    assert proxy["depends_on"] == {"web": {"condition": "service_healthy"}}
    assert "ports" not in services["web"] and services["web"]["expose"] == ["8000"]
    # Behind the proxy the login lock counts the client's address, which the proxy forwards.
    assert services["web"]["environment"]["CONCORD_CLIENT_IP_HEADER"] == "HTTP_X_FORWARDED_FOR"


def test_the_proxy_health_checks_its_upstream_on_a_url_the_app_serves(client, db):
    text = caddyfile()
    upstream = re.search(r"reverse_proxy \{\$CONCORD_UPSTREAM:(\S+)\}", text).group(1)
    assert upstream == "web:8000" and "8000" in compose()["services"]["web"]["expose"]
    path = re.search(r"health_uri (\S+)", text).group(1)
    host = re.search(r"health_headers \{\s*Host (\S+)", text).group(1)
    assert client.get(path, HTTP_HOST=host).status_code == 200
    # Django allows that host in compose whatever DJANGO_ALLOWED_HOSTS says.
    allowed = compose()["services"]["web"]["environment"]["DJANGO_ALLOWED_HOSTS"]
    assert allowed.endswith(f",{host}")
    for directive in ("health_interval", "fail_duration", "lb_try_duration"):
        assert directive in text


def test_the_proxy_answers_a_dead_upstream_with_a_retryable_502_or_503():
    text = caddyfile()
    assert "{err.status_code} in [502, 503, 504]" in text
    assert "Retry-After" in text
    api_body = re.search(r"respond `(\{.*?\})` \{err.status_code\}", text).group(1)
    assert json.loads(api_body)["code"] == "unavailable"


def test_the_caddyfile_is_valid_for_caddy(tmp_path):
    require(shutil.which("caddy") is not None, "needs the caddy binary (apt-get install caddy)")
    result = subprocess.run(
        ["caddy", "validate", "--config", "deploy/Caddyfile", "--adapter", "caddyfile"],
        cwd=REPO,
        capture_output=True,
        text=True,
        env={**os.environ, "XDG_DATA_HOME": str(tmp_path), "XDG_CONFIG_HOME": str(tmp_path)},
    )
    assert result.returncode == 0, result.stderr[-2000:]


def test_gunicorn_takes_its_workers_and_worker_class_from_the_environment(monkeypatch):
    monkeypatch.setenv("GUNICORN_WORKERS", "7")
    monkeypatch.setenv("GUNICORN_WORKER_CLASS", "gthread")
    monkeypatch.setenv("GUNICORN_THREADS", "4")
    conf = runpy.run_path(str(REPO / "config" / "gunicorn.py"))
    assert (conf["workers"], conf["worker_class"], conf["threads"]) == (7, "gthread", 4)
    for name in ("GUNICORN_WORKERS", "GUNICORN_WORKER_CLASS", "GUNICORN_THREADS"):
        monkeypatch.delenv(name)
    conf = runpy.run_path(str(REPO / "config" / "gunicorn.py"))
    assert (conf["workers"], conf["worker_class"], conf["bind"]) == (3, "sync", "0.0.0.0:8000")
    web = compose()["services"]["web"]["environment"]
    assert web["GUNICORN_WORKERS"] == "${GUNICORN_WORKERS:-3}"
    assert web["GUNICORN_WORKER_CLASS"] == "${GUNICORN_WORKER_CLASS:-sync}"


def test_conn_max_age_comes_from_the_environment():
    code = "from django.conf import settings; print(settings.DATABASES['default']['CONN_MAX_AGE'])"
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    for value, expected in (("60", "60"), (None, "0")):
        if value is None:
            env.pop("DJANGO_CONN_MAX_AGE", None)
        else:
            env["DJANGO_CONN_MAX_AGE"] = value
        result = subprocess.run(
            [sys.executable, "-c", f"import django; django.setup(); {code}"],
            cwd=REPO,
            env={**env, "DJANGO_SETTINGS_MODULE": "config.settings"},
            capture_output=True,
            text=True,
        )
        assert result.stdout.strip() == expected, result.stderr[-2000:]
    for service in ("web", "worker"):
        assert compose()["services"][service]["environment"]["DJANGO_CONN_MAX_AGE"]


def test_the_readme_documents_the_deployment_variables():
    readme = (REPO / "README.md").read_text()
    for name in (
        "DJANGO_CONN_MAX_AGE",
        "GUNICORN_WORKERS",
        "GUNICORN_WORKER_CLASS",
        "GUNICORN_THREADS",
        "CONCORD_SITE_ADDRESS",
        "CONCORD_CLIENT_IP_HEADER",
    ):
        assert name in readme, name


def test_the_proxy_refuses_large_bodies_from_their_content_length(tmp_path):
    """Caddy itself, with deploy/Caddyfile's site block, in front of a stub upstream that records
    what reaches it: a 120 MB POST to /login/ (only its first MiB sent) is a 413 and reaches no
    worker; an import upload is passed on up to CONCORD_PROXY_UPLOAD_MAX, refused above it."""
    require(shutil.which("caddy") is not None, "needs the caddy binary (apt-get install caddy)")
    import http.client
    import http.server
    import socket
    import threading
    import time

    received: list[tuple[str, int]] = []

    class Upstream(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"ok")

        def do_POST(self):
            length, read = int(self.headers.get("Content-Length") or 0), 0
            while read < length and (chunk := self.rfile.read(min(65536, length - read))):
                read += len(chunk)
            received.append((self.path, read))
            self.do_GET()

        def log_message(self, *args):
            pass

    def free_port() -> int:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            return s.getsockname()[1]

    upstream = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=upstream.serve_forever, daemon=True).start()
    port = free_port()
    config = tmp_path / "Caddyfile"
    config.write_text("{\n\tadmin off\n}\n" + caddyfile())
    env = {
        **os.environ,
        "XDG_DATA_HOME": str(tmp_path),
        "XDG_CONFIG_HOME": str(tmp_path),
        "CONCORD_SITE_ADDRESS": f"http://127.0.0.1:{port}",
        "CONCORD_UPSTREAM": f"127.0.0.1:{upstream.server_address[1]}",
        "CONCORD_PROXY_UPLOAD_MAX": str(30 * 2**20),
    }
    caddy = subprocess.Popen(
        ["caddy", "run", "--config", str(config), "--adapter", "caddyfile"],
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )

    def post(path: str, length: int, sent: int) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
        conn.putrequest("POST", path)
        conn.putheader("Content-Type", "application/octet-stream")
        conn.putheader("Content-Length", str(length))
        conn.endheaders()
        try:
            for _ in range(sent // 2**20):
                conn.send(b"\0" * 2**20)
        except OSError:  # the proxy answered and closed while the body was still going
            pass
        response = conn.getresponse()
        body = response.read()
        conn.close()
        return response.status, body

    try:
        deadline = time.monotonic() + 30
        while True:  # until the proxy serves (and its first health check has passed)
            try:
                if post("/healthz-probe", 0, 0)[0] == 200:
                    break
            except OSError:
                pass
            assert time.monotonic() < deadline, "caddy did not start"
        received.clear()
        status, body = post("/login/", 120 * 10**6, 2**20)
        assert status == 413 and b"20 MiB" in body
        status, body = post("/api/projects/s/study/", 25 * 2**20, 2**20)
        assert status == 413 and json.loads(body)["code"] == "too_large"
        status, body = post("/api/projects/s/import/", 40 * 2**20, 2**20)
        assert status == 413 and b"CONCORD_MAX_UPLOAD_BYTES" in body
        assert received == []  # nothing of those reached the upstream
        assert post("/api/projects/s/import/", 25 * 2**20, 25 * 2**20)[0] == 200
        assert post("/login/", 2**20, 2**20)[0] == 200
        assert received == [("/api/projects/s/import/", 25 * 2**20), ("/login/", 2**20)]
    finally:
        caddy.terminate()
        caddy.wait(timeout=30)
        upstream.shutdown()
