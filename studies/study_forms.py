"""The "new study" and "study settings" form: one study file, edited in the browser.

The form has the study file's own keys (name, slug, status, annotators per item, guidelines)
and one field per key of the task type's ``config`` and of ``crowd``, generated from the same
JSON Schema as study files (:mod:`studies.schema_forms`). Saving builds the study file's data
and applies it with :func:`studies.study_files.study_apply`, so the page checks exactly what a
study file is checked for; each problem comes back on the field it belongs to.

What the form leaves alone stays as it is: members and judges (their own pages), and the keys of
``config`` and ``crowd`` the project already stores. A key the form would only fill with its
default is not written (saving an unchanged form changes nothing).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms

from core.errors import Refusal
from projects.models import Project
from studies.schema_forms import SEP, schema_errors, schema_fields, schema_initial, schema_values
from studies.study_files import config_json_schema, crowd_json_schema, error_paths

CONFIG, CROWD = "config", "crowd"
# The top-level keys of a study file that the form edits, with their form field.
OWN_KEYS = ("name", "slug", "status", "annotators_per_item", "guidelines")


def newline_normalised(text: str) -> str:
    """Text from a browser's text area, with the newlines as they were typed (``\\n``): a form
    posts ``\\r\\n``, which would otherwise be stored (and exported) as a change."""
    return text.replace("\r\n", "\n").replace("\r", "\n")


class StudyForm(forms.Form):
    task_type = ""  # set by :func:`study_form_for`

    name = forms.CharField(max_length=200, help_text="The study's name, as members see it.")
    slug = forms.SlugField(
        max_length=80,
        help_text=(
            "The study's address: /p/SLUG/. Letters, digits, - and _, kept in lower case; "
            "fixed once created."
        ),
    )
    status = forms.ChoiceField(choices=Project.Status.choices, initial=Project.Status.ACTIVE)
    annotators_per_item = forms.IntegerField(
        min_value=1,
        max_value=100,
        initial=3,
        help_text="How many annotators answer each regular item.",
    )
    guidelines = forms.CharField(
        required=False,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 10}),
        help_text="Markdown. Annotators open them from every item.",
    )

    def __init__(self, *args: Any, project: Project | None = None, **kwargs: Any) -> None:
        self.project = project
        if project is not None and "initial" not in kwargs:
            kwargs["initial"] = study_initial(project)
        super().__init__(*args, **kwargs)
        if project is not None:
            self.fields["slug"].disabled = True

    def clean_guidelines(self) -> str:
        return newline_normalised(self.cleaned_data.get("guidelines") or "")

    def config_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.fields if name.startswith(CONFIG + SEP)]

    def crowd_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in self.fields if name.startswith(CROWD + SEP)]

    def own_fields(self) -> list[forms.BoundField]:
        return [self[name] for name in OWN_KEYS]

    def study(self, *, base: Mapping[str, Any]) -> dict:
        """The study file this form describes: ``base`` (the project's exported study file, or
        {} for a new one) with the form's keys changed."""
        cleaned = self.cleaned_data
        stored_config = dict(base.get("config") or {})
        stored_crowd = dict(base.get("crowd") or {})
        config_schema = config_json_schema(self.task_type)
        crowd_schema = crowd_json_schema()
        config = kept_values(
            config_schema,
            schema_values(config_schema, prefix=CONFIG, cleaned=cleaned),
            stored_config,
        )
        crowd = kept_values(
            crowd_schema, schema_values(crowd_schema, prefix=CROWD, cleaned=cleaned), stored_crowd
        )
        return {
            "members": [],
            "judges": [],
            **base,
            **{key: cleaned[key] for key in OWN_KEYS},
            "task_type": self.task_type,
            "config": config,
            "crowd": crowd,
        }

    def add_refusal(self, refusal: Refusal) -> None:
        """A refused study file's problems, each on the field it belongs to."""
        detail = refusal.errors
        if not isinstance(detail, Mapping):
            key = (refusal.field or "").split(".")[0].split("[")[0]
            self.add_error(key if key in self.fields else None, refusal.message)
            return
        for key, problem in detail.items():
            if key in (CONFIG, CROWD):
                schema = (
                    config_json_schema(self.task_type) if key == CONFIG else crowd_json_schema()
                )
                keys = set(schema.get("properties") or {})
                for field, message in schema_errors(problem, prefix=key, keys=keys):
                    self.add_error(field if field in self.fields else None, message)
            else:
                for message in error_paths(problem, str(key)):
                    self.add_error(key if key in self.fields else None, message)


def kept_values(schema: Mapping[str, Any], values: Mapping[str, Any], stored: Mapping) -> dict:
    """The values to store: each key the project already stores, and any other that differs
    from its default (a default the form only showed is not written); stored keys the form
    has no field for stay as they are."""
    props = schema.get("properties") or {}
    kept = {key: value for key, value in stored.items() if key not in props}
    for key, value in values.items():
        if key in stored or not (
            "default" in props.get(key, {}) and props[key]["default"] == value
        ):
            kept[key] = value
    return kept


def study_initial(project: Project) -> dict:
    """The form's initial data for a project (its stored study file)."""
    initial: dict[str, Any] = {
        "name": project.name,
        "slug": project.slug,
        "status": project.status,
        "annotators_per_item": project.annotators_per_item,
        "guidelines": project.guidelines,
    }
    initial.update(
        schema_initial(
            config_json_schema(project.task_type), prefix=CONFIG, values=project.config or {}
        )
    )
    initial.update(schema_initial(crowd_json_schema(), prefix=CROWD, values=project.crowd or {}))
    return initial


def study_form_for(task_type: str) -> type[StudyForm]:
    """:class:`StudyForm` with the fields of ``task_type``'s configuration and the crowd
    settings, generated from their JSON Schema."""
    fields = {
        **schema_fields(config_json_schema(task_type), prefix=CONFIG),
        **schema_fields(crowd_json_schema(), prefix=CROWD),
    }
    return type(f"StudyForm_{task_type}", (StudyForm,), {"task_type": task_type, **fields})
