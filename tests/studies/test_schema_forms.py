"""The admin edits a project's task configuration and crowd settings in forms generated from the
study files' JSON Schema, one field per key, checked by the same serializers: each field kind,
errors naming the path, nothing saved on an error."""

import json

import pytest

from annotation import task_types
from projects.models import Project
from studies.admin import project_form_for
from studies.schema_forms import (
    BOOLEAN,
    DECIMAL,
    ENUM,
    INTEGER,
    JSON,
    LINES,
    NUMBER,
    STRING,
    property_kind,
)
from studies.study_files import config_json_schema, crowd_json_schema, study_export

ADD = "/admin/projects/project/add/"


def browser_data(task_type: str, **changes) -> dict:
    """What the admin page posts when nothing is touched (the generated fields' initial values),
    with ``changes`` (``config__seed=…``; None leaves a key out, as an unticked box)."""
    form = project_form_for(task_type)()
    data = {
        "slug": "schema-p",
        "name": "Schema P",
        "task_type": task_type,
        "status": "active",
        "annotators_per_item": 3,
        "guidelines": "",
        "config_for": task_type,
        "memberships-TOTAL_FORMS": 0,
        "memberships-INITIAL_FORMS": 0,
    }
    for name, field in form.fields.items():
        if not name.startswith(("config__", "crowd__")):
            continue
        initial = field.initial
        if property_kind_of(name, task_type) == BOOLEAN:
            if initial:
                data[name] = "on"
        elif property_kind_of(name, task_type) == JSON:
            data[name] = "" if initial is None else json.dumps(initial)
        else:
            data[name] = "" if initial is None else initial
    for key, value in changes.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    return data


def property_kind_of(name: str, task_type: str) -> str:
    prefix, key = name.split("__", 1)
    schema = config_json_schema(task_type) if prefix == "config" else crowd_json_schema()
    return property_kind(schema["properties"][key])


def bound(task_type: str, **changes):
    form = project_form_for(task_type)(data=browser_data(task_type, **changes))
    form.is_valid()
    return form


def test_every_key_of_every_schema_has_a_field_and_every_kind_is_covered():
    kinds = set()
    for task_type in task_types.all_task_types():
        form = project_form_for(task_type.slug)()
        for prefix, schema in (
            ("config", config_json_schema(task_type.slug)),
            ("crowd", crowd_json_schema()),
        ):
            for key, prop in schema["properties"].items():
                field = form.fields[f"{prefix}__{key}"]
                assert field.label == f"{prefix}.{key}"
                kinds.add(property_kind(prop))
        assert "config" not in form.fields and "crowd" not in form.fields  # no raw JSON
    assert kinds == {BOOLEAN, INTEGER, NUMBER, DECIMAL, ENUM, STRING, LINES, JSON}


def test_guidelines_keep_their_newlines_and_an_unset_json_key_shows_empty(db):
    """A browser posts CRLF; the guidelines are stored as typed (LF, trailing newline kept), and
    a JSON key that is not set (citation recovery's control_quota) shows an empty box, not
    ``null``."""
    form = bound("citation_recovery", guidelines="# Title\r\n\r\nText.\r\n")
    assert form.is_valid(), form.errors
    project = form.save()
    assert project.guidelines == "# Title\n\nText.\n"
    assert project.config == {}
    page = project_form_for("citation_recovery")(instance=project)
    rendered = str(page["config__control_quota"])
    assert rendered.split(">", 1)[1].strip() == "</textarea>"  # empty, not "null"


def test_an_untouched_form_writes_no_default(db):
    """As a study file would: the keys set, not the defaults the form showed (issue 26: the
    admin wrote the default helpfulness question into every config it saved)."""
    form = bound("ranking")
    assert form.is_valid(), form.errors
    project = form.save()
    assert project.config == {} and project.crowd == {}
    expected = dict(task_types.get("ranking").validate_config({}))
    assert task_types.get("ranking").validate_config(project.config) == expected


@pytest.mark.parametrize(
    "task_type, changes, stored",
    [
        ("ranking", {"config__tie_instructions": None}, ("config", "tie_instructions", False)),
        ("ranking", {"crowd__mturk_sandbox": None}, ("crowd", "mturk_sandbox", False)),
        (
            "ranking",
            {"crowd__qualification_required": "on"},
            ("crowd", "qualification_required", True),
        ),
        ("ranking", {"config__seed": "99"}, ("config", "seed", 99)),
        ("ranking", {"crowd__accuracy_threshold": "0.85"}, ("crowd", "accuracy_threshold", 0.85)),
        ("ranking", {"crowd__reward_per_batch": "1.50"}, ("crowd", "reward_per_batch", "1.50")),
        ("ranking", {"config__tie_convention": "dense"}, ("config", "tie_convention", "dense")),
        (
            "citation_recovery",
            {"config__helpfulness_question": "Useful?"},
            ("config", "helpfulness_question", "Useful?"),
        ),
        (
            "ranking",
            {"config__systems": "gpt4\n\n gpt35 \n"},
            ("config", "systems", ["gpt4", "gpt35"]),
        ),
        (
            "ranking",
            {"config__criteria": '[{"name": "Overall", "definition": "All in all."}]'},
            (
                "config",
                "criteria",
                [{"name": "Overall", "definition": "All in all."}],
            ),
        ),
        ("ranking", {"crowd__batch_minutes": "45"}, ("crowd", "batch_minutes", 45)),
        ("ranking", {"crowd__currency": "EUR"}, ("crowd", "currency", "EUR")),
    ],
)
def test_each_field_kind_is_stored_as_the_study_file_holds_it(db, task_type, changes, stored):
    form = bound(task_type, **changes)
    assert form.is_valid(), form.errors
    project = form.save()
    where, key, value = stored
    assert getattr(project, where)[key] == value


@pytest.mark.parametrize(
    "changes, field, message",
    [
        ({"config__seed": "many"}, "config__seed", "config.seed: Enter a whole number."),
        (
            {"crowd__batch_size": "501"},
            "crowd__batch_size",
            "crowd.batch_size: Ensure this value is less than or equal to 500.",
        ),
        (
            {"crowd__accuracy_threshold": "1.5"},
            "crowd__accuracy_threshold",
            "crowd.accuracy_threshold: Ensure this value is less than or equal to 1",
        ),
        (
            {"crowd__reward_per_batch": "lots"},
            "crowd__reward_per_batch",
            "crowd.reward_per_batch: A valid number is required.",
        ),
        (
            {"config__tie_convention": "olympic"},
            "config__tie_convention",
            "config.tie_convention: Select a valid choice.",
        ),
        ({"config__criteria": "[{"}, "config__criteria", "config.criteria: Enter a valid JSON."),
        (
            {"config__criteria": '[{"name": "X"}]'},
            "config__criteria",
            "config.criteria[0].definition: This field is required.",
        ),
        (
            {"config__criteria": "[]"},
            "config__criteria",
            "config.criteria: A ranking project needs at least one criterion",
        ),
        (
            {"crowd__controls_per_batch": "2"},
            "crowd__controls_per_batch",
            "crowd.controls_per_batch: Controls per batch need batches",
        ),
        (
            {"crowd__prolific_completion_code": "a b"},
            "crowd__prolific_completion_code",
            "crowd.prolific_completion_code:",
        ),
    ],
)
def test_errors_name_the_path_on_their_field(db, changes, field, message):
    form = bound("ranking", **changes)
    assert not form.is_valid()
    assert any(m.startswith(message) for m in form.errors[field]), form.errors


def test_the_admin_page_creates_edits_and_refuses_with_the_path(admin_client):
    page = admin_client.get(ADD + "?task_type=ranking").content.decode()
    assert 'name="config__tie_convention"' in page and 'name="crowd__batch_size"' in page
    assert 'name="config"' not in page and 'name="crowd"' not in page
    assert "Task configuration (Ranking with ties)" in page

    response = admin_client.post(
        ADD, browser_data("ranking", config__seed="7", crowd__batch_size="6")
    )
    assert response.status_code == 302, response.content.decode()[:3000]
    project = Project.objects.get(slug="schema-p")
    assert project.config["seed"] == 7 and project.crowd == {"batch_size": 6}

    change = f"/admin/projects/project/{project.pk}/change/"
    page = admin_client.get(change).content.decode()
    assert 'name="config__seed" value="7"' in page and 'name="crowd__batch_size" value="6"' in page

    before = study_export(project=project)
    response = admin_client.post(
        change,
        browser_data("ranking", config__seed="7", crowd__batch_size="6", crowd__control_rate="0.2"),
    )
    assert response.status_code == 200
    assert "crowd.control_rate: With batches, use controls_per_batch instead" in (
        response.content.decode()
    )
    project.refresh_from_db()
    assert study_export(project=project) == before  # nothing changed


def test_a_new_task_type_shows_its_defaults_before_anything_is_saved(admin_client):
    data = browser_data("ranking")
    data["task_type"] = "stance"  # chosen on the page showing ranking's settings
    response = admin_client.post(ADD, data)
    assert response.status_code == 200
    html = response.content.decode()
    assert "The task type is now stance" in html and 'name="config__k" value="5"' in html
    assert not Project.objects.filter(slug="schema-p").exists()
