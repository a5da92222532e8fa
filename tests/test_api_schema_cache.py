"""Issue 31: /api/schema/ (what /api/docs/ loads) is generated and rendered once per process and
format, not on every request."""

from __future__ import annotations

from django.test import Client

from projects import schema


def test_the_schema_is_generated_once_and_served_the_same(db, monkeypatch):
    schema._SCHEMAS.clear()
    calls = []
    generate = schema.CachedSchemaView.generator_class.get_schema

    def counted(self, *args, **kwargs):
        calls.append(1)
        return generate(self, *args, **kwargs)

    monkeypatch.setattr(schema.CachedSchemaView.generator_class, "get_schema", counted)
    client = Client()
    first = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    second = client.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert first.status_code == second.status_code == 200
    assert first.content == second.content
    assert first.json()["info"]["title"] == "Concord API"
    assert first["Content-Type"] == second["Content-Type"]
    assert len(calls) == 1
    yaml = client.get("/api/schema/")  # another format: rendered once more from a generation
    assert yaml.status_code == 200
    assert yaml.content.startswith(b"openapi:")
