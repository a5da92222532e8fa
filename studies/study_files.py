"""Study files: one file (YAML or JSON) that describes a project, so a study can be reviewed,
versioned, copied and published, and set up with ``manage.py study apply FILE`` or the API.

Keys: ``slug``, ``name``, ``task_type``, ``config`` (the task type's settings), ``guidelines``
(Markdown; or ``guidelines_file``, a path relative to the study file, on the command line),
``annotators_per_item``, ``status``, ``crowd`` (crowd and quality settings, see
:mod:`projects.crowd`), ``members`` (``[{username, role}]``) and ``judges`` (``[{name, kind,
model, endpoint, parameters, description, prompt: {name, version}}]``: ``llm_judges.Judge``'s
fields, an LLM judge's model endpoint by name, the prompt template by name and version; or
``{builtin: NAME, name}``: a catalogue judge such as ``minilm-similarity`` as it is, its kind,
model, parameters and description left out). They are validated by the same
serializers the admin and the task types use; every problem is reported with its path in the file
(``crowd.controls_per_batch: …``) and nothing is changed. :func:`study_apply` creates or updates
the project and returns the changes (``dry_run`` only reports them); :func:`study_export` writes
the file back, so applying an exported file changes nothing.

Applied to an existing project, a file changes what it gives: settings it leaves out
(``status``, ``annotators_per_item``, ``guidelines``, ``config``, ``crowd``) keep their values,
never reset to the defaults a new project gets.

Members: listed accounts are added or given the listed role; members the file does not list are
kept (work is never dropped), and crowd-platform accounts are never listed. The task type of a
project that has items cannot change.

Judges are the project's own (``llm_judges.Judge.project``): a listed judge is created in the
project when it has none of that name, or changed; a file never reaches another project's judge.
A judge that has run keeps its kind, model, endpoint and parameters (results are keyed by judge;
its description and prompt may change): new settings need a new name. An LLM judge calls a
model endpoint staff set up (``llm_judges.ModelEndpoint``), named by ``endpoint``; the file may
name only the endpoints the project may use, and never a URL or an API key. Judges the file does
not list stay. The export lists the project's judges, parameters as stored (defaults filled in).

A study file is untrusted input, applied with the rights of the user who sends it; a
``guidelines_file`` is read only from the study file's own folder (or below), and YAML is read
without aliases (:mod:`core.yaml_safety`).
"""

from __future__ import annotations

import difflib
import functools
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils.translation import get_language
from rest_framework import serializers

from annotation import task_types
from annotation.models import Annotation, ExternalAnnotation
from core.errors import Refusal
from core.json_safety import UnsafeJSON
from core.json_safety import loads as json_loads
from core.serializers import KnownKeysOnly
from core.yaml_safety import UnsafeYAML, yaml_dump, yaml_load
from llm_judges.models import Judge, JudgeRun, ModelEndpoint, PromptTemplate
from llm_judges.parameters import ENDPOINT_KEYS, clean_model, clean_parameters
from llm_judges.selectors import endpoints_for_project
from llm_judges.services.configuration import judge_create
from llm_judges.services.prompt_templates import shipped_template
from projects.audit import SETTINGS_FIELDS, AuditKind, audit_record, settings_audit, settings_of
from projects.crowd import CrowdSettingsSerializer
from projects.members import members_apply
from projects.models import Membership, Project
from projects.services import project_create, project_settings, settings_version_record

KEYS = (
    "slug",
    "name",
    "task_type",
    "status",
    "annotators_per_item",
    "guidelines",
    "config",
    "crowd",
    "members",
    "judges",
)
CROWD_ACCOUNT_PREFIXES = ("prolific-", "mturk-")
RESERVED_SLUGS = frozenset({"new"})  # /p/new/ creates a study
GUIDELINES_MAX_BYTES = 1024 * 1024  # a guidelines_file; guidelines: as many characters


class MemberSerializer(KnownKeysOnly):
    unknown_message = "Unknown key; a member has: {known}."

    username = serializers.CharField(max_length=150)
    role = serializers.ChoiceField(
        choices=Membership.Role.values, default=Membership.Role.ANNOTATOR
    )


class PromptRefSerializer(KnownKeysOnly):
    unknown_message = "Unknown key; a prompt reference has: {known}."

    name = serializers.CharField(max_length=100)
    version = serializers.IntegerField(min_value=1)


class JudgeEntrySerializer(KnownKeysOnly):
    unknown_message = "Unknown key; a judge has: {known}."
    key_hints = {
        key: "A study file never names a server or a key: an LLM judge names the model endpoint "
        "staff set up for the project (endpoint: NAME)."
        for key in ENDPOINT_KEYS
    }

    builtin = serializers.CharField(
        required=False,
        max_length=100,
        help_text="A built-in (catalogue) judge by name, e.g. minilm-similarity: the project's "
        "judge takes its kind, model, parameters and description, which the entry then leaves "
        "out; name is optional (the built-in's name by default).",
    )
    name = serializers.CharField(max_length=100, required=False)
    kind = serializers.ChoiceField(choices=Judge.Kind.values, required=False)
    model = serializers.CharField(max_length=500, required=False)
    endpoint = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        max_length=100,
        help_text="LLM judges: the name of the model endpoint it calls, one staff set up for "
        "this project (the admin's model endpoints).",
    )
    parameters = serializers.DictField(default=dict)
    description = serializers.CharField(allow_blank=True, default="", trim_whitespace=False)
    prompt = PromptRefSerializer(
        required=False,
        allow_null=True,
        default=None,
        help_text="An LLM judge's prompt template (manage.py load_prompt); the task type's "
        "shipped prompt when left out.",
    )

    # What a built-in judge gives an entry that names it (the entry may add only its name).
    BUILTIN_GIVES = ("kind", "model", "endpoint", "parameters", "description", "prompt")

    def to_internal_value(self, data: Any) -> dict:
        attrs = super().to_internal_value(data)
        builtin = attrs.pop("builtin", None)
        if builtin is None:
            missing = [key for key in ("name", "kind", "model") if key not in attrs]
            if missing:
                raise serializers.ValidationError(
                    {
                        missing[0]: "This field is required (or name a built-in judge: "
                        "builtin: minilm-similarity)."
                    }
                )
            return attrs
        given = [key for key in self.BUILTIN_GIVES if key in data]
        if given:
            raise serializers.ValidationError(
                {
                    given[0]: f"The built-in judge {builtin!r} gives its {given[0]}; leave it out, "
                    "or describe the judge in full without builtin to change its settings."
                }
            )
        return {**attrs, **_builtin_entry(builtin), "name": attrs.get("name") or builtin}


def _builtin_entry(name: str) -> dict:
    """A catalogue judge as a study file's entry (its name, kind, model, parameters and
    description); ``ValidationError`` naming the built-in judges when there is none so named."""
    found = Judge.objects.filter(project__isnull=True, name=name).first()
    if found is None:
        known = ", ".join(
            Judge.objects.filter(project__isnull=True)
            .order_by("name")
            .values_list("name", flat=True)
        )
        raise serializers.ValidationError(
            {"builtin": f"No built-in judge {name!r} (built-in: {known or 'none'})."}
        )
    return {
        "kind": found.kind,
        "model": found.model,
        "endpoint": "",
        "parameters": dict(found.parameters or {}),
        "description": found.description,
        "prompt": None,
    }


JUDGE_FROZEN = ("kind", "model", "endpoint", "parameters")
# A judge's prompt may change after it has run (results record their prompt version).
JUDGE_CHANGEABLE = (*JUDGE_FROZEN, "description", "prompt")


def _judge_stored(entry: Mapping) -> dict:
    """A study file's judge entry as ``Judge`` stores it (the endpoint by name, None if none)."""
    return {
        "name": entry["name"],
        "kind": entry["kind"],
        "model": entry["model"],
        "endpoint": entry.get("endpoint") or None,
        "parameters": dict(entry.get("parameters") or {}),
        "description": entry.get("description", ""),
        "prompt": dict(entry["prompt"]) if entry.get("prompt") else None,
    }


def _judge_entry(judge: Judge) -> dict:
    """A judge as a study file's entry."""
    entry: dict[str, Any] = {"name": judge.name, "kind": judge.kind, "model": judge.model}
    if judge.endpoint_id is not None:
        entry["endpoint"] = judge.endpoint.name
    entry["parameters"] = dict(_judge_value(judge, "parameters") or {})
    entry["description"] = judge.description
    if judge.prompt_id is not None:
        entry["prompt"] = _judge_value(judge, "prompt")
    return entry


def _prompt_template(ref: Mapping, task_type: str) -> PromptTemplate:
    """The prompt template a judge entry names; ``ValueError`` saying why not. The shipped
    prompt of the project's task type (named after it) is created on demand."""
    found = PromptTemplate.objects.filter(name=ref["name"], version=ref["version"]).first()
    if found is None and ref["name"] == task_type:
        shipped_template(task_type=task_type)
        found = PromptTemplate.objects.filter(name=ref["name"], version=ref["version"]).first()
    if found is None:
        raise ValueError(
            f"no prompt template {ref['name']!r} version {ref['version']} "
            "(load it first with manage.py load_prompt)"
        )
    if found.task_type != task_type:
        raise ValueError(f"{found} is for {found.task_type}, not {task_type}")
    return found


def _judge_errors(
    entries: list[dict], project: Project | None, task_type: str
) -> tuple[list[dict], dict]:
    """The entries cleaned as ``Judge`` stores them, and the errors by entry index. Only the
    project's own judges are looked at, and only the endpoints the project may use offered."""
    cleaned, errors = [], {}
    names = [e["name"] for e in entries]
    existing = (
        {j.name: j for j in Judge.objects.filter(project=project, name__in=names)}
        if project is not None
        else {}
    )
    endpoints = {e.name: e for e in endpoints_for_project(project=project)}
    for index, entry in enumerate(entries):
        stored = _judge_stored(entry)
        try:
            stored["model"] = clean_model(stored["kind"], stored["model"])
            stored["parameters"] = clean_parameters(stored["kind"], stored["parameters"])
        except serializers.ValidationError as exc:
            key, message = next(iter(exc.detail.items()))
            message = " ".join(str(m) for m in message) if isinstance(message, list) else message
            if key not in ("model", "kind", "parameters"):
                key = f"parameters.{key}"
            errors[index] = {key: str(message)}
            continue
        if names.index(entry["name"]) != index:
            errors[index] = {"name": f"{entry['name']!r} is listed twice."}
            continue
        problem = _endpoint_problem(stored, endpoints) or _prompt_problem(stored, task_type)
        if problem:
            errors[index] = problem
            continue
        judge = existing.get(entry["name"])
        if judge is not None:
            differs = [f for f in JUDGE_FROZEN if _judge_value(judge, f) != stored[f]]
            if differs and JudgeRun.objects.filter(judge=judge).exists():
                errors[index] = {
                    differs[0]: f"The judge {judge.name!r} has run, so its "
                    f"{', '.join(differs)} cannot change (results are kept by judge); "
                    "give the new settings a new name."
                }
                continue
        cleaned.append(stored)
    return cleaned, errors


def _endpoint_problem(stored: dict, endpoints: Mapping[str, ModelEndpoint]) -> dict:
    """Why an entry's endpoint cannot be used ({} when it can): LLM judges name one of the
    endpoints the project may use; other judges name none."""
    name = stored["endpoint"]
    if stored["kind"] != Judge.Kind.LLM:
        return {"endpoint": "Only LLM judges call an endpoint."} if name else {}
    offered = ", ".join(endpoints) or "none: ask staff to set one up for this project"
    if not name:
        return {"endpoint": f"An LLM judge needs a model endpoint (available: {offered})."}
    if name not in endpoints:
        return {"endpoint": f"No model endpoint {name!r} for this project (available: {offered})."}
    return {}


def _prompt_problem(stored: dict, task_type: str) -> dict:
    if stored["prompt"] is None:
        return {}
    if stored["kind"] != Judge.Kind.LLM:
        return {"prompt": "prompt templates are for LLM judges"}
    try:
        _prompt_template(stored["prompt"], task_type)
    except ValueError as exc:
        return {"prompt": str(exc)}
    return {}


def _judge_value(judge: Judge, field: str):
    """A judge's stored field, parameters with their defaults filled (as a study file's are)."""
    if field == "prompt":
        template = judge.prompt
        return None if template is None else {"name": template.name, "version": template.version}
    if field == "endpoint":
        return judge.endpoint.name if judge.endpoint_id is not None else None
    if field != "parameters":
        return getattr(judge, field)
    try:
        return clean_parameters(judge.kind, judge.parameters)
    except serializers.ValidationError:
        return judge.parameters


class StudySerializer(KnownKeysOnly):
    unknown_message = "Unknown key; a study file has: {known}."

    slug = serializers.SlugField(max_length=80)
    name = serializers.CharField(max_length=200)
    task_type = serializers.ChoiceField(choices=[])
    status = serializers.ChoiceField(choices=Project.Status.values, default=Project.Status.ACTIVE)
    annotators_per_item = serializers.IntegerField(min_value=1, max_value=100, default=3)
    # As long as a guidelines_file may be (1 MiB): the annotate page carries them to every
    # annotator, so a request cannot make that page tens of megabytes.
    guidelines = serializers.CharField(
        allow_blank=True, default="", trim_whitespace=False, max_length=GUIDELINES_MAX_BYTES
    )
    config = serializers.DictField(default=dict)
    crowd = serializers.DictField(default=dict)
    members = MemberSerializer(many=True, default=list)
    judges = JudgeEntrySerializer(many=True, default=list)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["task_type"].choices = [t.slug for t in task_types.all_task_types()]

    def validate_slug(self, value: str) -> str:
        if value.lower() in RESERVED_SLUGS:
            raise serializers.ValidationError(f"{value!r} is a page of its own (/p/{value}/).")
        return value

    def validate(self, attrs: dict) -> dict:
        errors: dict[str, Any] = {}
        config = task_types.get(attrs["task_type"]).config_serializer(data=attrs["config"])
        unknown = sorted(set(attrs["config"]) - set(config.fields), key=str)
        if unknown:
            errors["config"] = {unknown[0]: _no_setting(str(unknown[0]), list(config.fields))}
        elif not config.is_valid():
            errors["config"] = config.errors
        crowd = CrowdSettingsSerializer(data=attrs["crowd"])
        try:
            valid_crowd = crowd.is_valid()
        except serializers.ValidationError as exc:  # unknown keys are refused in to_internal_value
            errors["crowd"] = exc.detail
        else:
            if not valid_crowd:
                errors["crowd"] = crowd.errors
        names = [m["username"] for m in attrs["members"]]
        known = set(
            get_user_model().objects.filter(username__in=names).values_list("username", flat=True)
        )
        member_errors = {}
        for index, name in enumerate(names):
            if name not in known:
                member_errors[index] = {"username": f"No account {name!r}; create it first."}
            elif names.index(name) != index:
                member_errors[index] = {"username": f"{name!r} is listed twice."}
        if member_errors:
            errors["members"] = member_errors
        # A new study's judges are checked as a new project's: never against the judges and
        # endpoints of a project of the same slug the sender may not see.
        attrs["judges"], judge_errors = _judge_errors(
            [dict(j) for j in attrs["judges"]],
            None if self.context.get("create_only") else project_named(attrs["slug"]),
            attrs["task_type"],
        )
        if judge_errors:
            errors["judges"] = judge_errors
        if errors:
            raise serializers.ValidationError(errors)
        return attrs


def _no_setting(key: str, known: list[str]) -> str:
    """A config key the task type does not have, with the closest one it has."""
    close = difflib.get_close_matches(key, known, n=1)
    hint = f" — did you mean {close[0]!r}?" if close else f" (settings: {', '.join(known)})"
    return f"no setting {key!r}{hint}"


def error_paths(detail: Any, prefix: str = "") -> list[str]:
    """``["crowd.controls_per_batch: Ensure …", "members[1].username: …"]`` from DRF errors."""
    if isinstance(detail, Mapping):
        out = []
        for key, value in detail.items():
            if isinstance(key, int) or (isinstance(key, str) and key.isdecimal()):
                path = f"{prefix}[{key}]"
            elif key == "non_field_errors":
                path = prefix
            else:
                path = f"{prefix}.{key}" if prefix else str(key)
            out += error_paths(value, path)
        return out
    if isinstance(detail, list):
        if all(not isinstance(v, (Mapping, list)) for v in detail):
            return [f"{prefix or 'file'}: {' '.join(str(v) for v in detail)}"]
        out = []
        for index, value in enumerate(detail):
            if value:
                out += error_paths(value, f"{prefix}[{index}]")
        return out
    return [f"{prefix or 'file'}: {detail}"]


def read_study_file(path: Path) -> dict:
    """The file's data (YAML or JSON by its suffix); ``guidelines_file`` is read relative to it."""
    text = path.read_text(encoding="utf-8")
    if path.suffix.lower() in (".yaml", ".yml"):
        try:
            data = yaml_load(text)
        except UnsafeYAML as exc:
            raise Refusal(f"{path.name}: {exc}", field="file") from None
    else:
        try:
            data = json_loads(text)  # bounded depth, no 5,000-digit numbers (core.json_safety)
        except json.JSONDecodeError as exc:
            raise Refusal(
                f"{path.name} is not valid JSON (line {exc.lineno}, column {exc.colno}): {exc.msg}",
                field="file",
            ) from None
        except UnsafeJSON as exc:
            where = f" at {exc.field}" if exc.field else ""
            raise Refusal(f"{path.name}{where}: {exc.message}", field="file") from None
    if not isinstance(data, dict):
        raise Refusal(f"{path.name} must hold one object (a mapping of keys).", field="file")
    if "guidelines_file" in data:
        if "guidelines" in data:
            raise Refusal("Give guidelines or guidelines_file, not both.", field="guidelines_file")
        data["guidelines"] = _guidelines_file(path, data.pop("guidelines_file"))
    return data


def _guidelines_file(study_file: Path, name: Any) -> str:
    """The Markdown a study file's ``guidelines_file`` names: a file in the study file's folder
    or below it (never ``../`` out of it, nor a link leading out), at most 1 MiB."""
    folder = study_file.resolve().parent
    target = (folder / str(name)).resolve()
    if not target.is_relative_to(folder):
        raise Refusal(
            f"guidelines_file: {name} is outside the study file's folder; put the guidelines "
            "beside the study file.",
            field="guidelines_file",
        )
    if not target.is_file():
        raise Refusal(f"guidelines_file: {name} does not exist.", field="guidelines_file")
    if target.stat().st_size > GUIDELINES_MAX_BYTES:
        raise Refusal(f"guidelines_file: {name} is larger than 1 MiB.", field="guidelines_file")
    return target.read_text(encoding="utf-8")


def project_named(slug: str, *, for_update: bool = False) -> Project | None:
    """The project a study file's ``slug`` names: the one of exactly that slug, else the one
    whose slug differs only in case (slugs are compared ignoring case, and a new project's is
    stored in lower case, so a file that says "Demo" applies again to the "demo" it created)."""
    # FOR NO KEY UPDATE: see docs/architecture.md (a first submit's COMMIT passes it)
    projects = (
        Project.objects.select_for_update(no_key=True) if for_update else Project.objects.all()
    )
    return (
        projects.filter(slug=slug).first()
        or projects.filter(slug__iexact=slug).order_by("pk").first()
    )


def _validated(data: Any, *, create_only: bool = False) -> dict:
    serializer = StudySerializer(data=data, context={"create_only": create_only})
    if not serializer.is_valid():
        problems = error_paths(serializer.errors)
        raise Refusal(
            "The study file was refused; nothing changed. " + "; ".join(problems),
            field=problems[0].split(":")[0] if problems else "file",
            errors=serializer.errors,
        )
    return dict(serializer.validated_data)


def study_export(*, project: Project) -> dict:
    """The study file of a project (members without crowd-platform accounts)."""
    members = [
        {"username": m.user.username, "role": m.role}
        for m in Membership.objects.current()
        .filter(project=project)
        .select_related("user")
        .order_by("role", "user__username")
        if not m.user.username.startswith(CROWD_ACCOUNT_PREFIXES)
    ]
    return {
        "slug": project.slug,
        "name": project.name,
        "task_type": project.task_type,
        "status": project.status,
        "annotators_per_item": project.annotators_per_item,
        "guidelines": project.guidelines,
        "config": project.config or {},
        "crowd": project.crowd or {},
        "members": members,
        "judges": [_judge_entry(j) for j in project_judges(project=project)],
    }


def study_file_text(*, project: Project, fmt: str = "yaml") -> str:
    """The project's study file as YAML (no anchors: it reads back) or JSON."""
    data = study_export(project=project)
    if fmt == "yaml":
        return yaml_dump(data)
    return json.dumps(data, indent=2, ensure_ascii=False) + "\n"


def project_judges(*, project: Project) -> list[Judge]:
    """The project's own judges."""
    return list(
        Judge.objects.filter(project=project).select_related("endpoint", "prompt").order_by("name")
    )


def _changes(before: Mapping, after: Mapping) -> list[str]:
    changes = []
    for key in KEYS:
        if key == "judges":
            old_judges = {j["name"]: _judge_stored(j) for j in before.get("judges", [])}
            for judge in after["judges"]:
                was = old_judges.get(judge["name"])
                if was is None:
                    changes.append(f"judges.{judge['name']}: added")
                    continue
                for field in JUDGE_CHANGEABLE:
                    if was.get(field) != judge[field]:
                        changes.append(
                            f"judges.{judge['name']}.{field}: "
                            f"{json.dumps(was[field], sort_keys=True)[:60]} → "
                            f"{json.dumps(judge[field], sort_keys=True)[:60]}"
                        )
            continue
        if key == "members":
            old = {m["username"]: m["role"] for m in before.get("members", [])}
            for member in after["members"]:
                name, role = member["username"], member["role"]
                if old.get(name) != role:
                    changes.append(f"members.{name}: {old.get(name, 'not a member')} → {role}")
            continue
        if before.get(key) != after[key]:
            shown = (
                json.dumps(before.get(key), ensure_ascii=False, sort_keys=True)[:80],
                json.dumps(after[key], ensure_ascii=False, sort_keys=True)[:80],
            )
            changes.append(f"{key}: {shown[0]} → {shown[1]}")
    return changes


def _judges_apply(*, project: Project, judges: list[dict], by=None) -> None:
    """Create or update (where nothing depends on it, see ``_judge_errors``) the project's own
    judges."""
    existing = {
        j.name: j
        for j in Judge.objects.filter(project=project, name__in=[j["name"] for j in judges])
    }
    endpoints = {e.name: e for e in endpoints_for_project(project=project)}
    for entry in judges:
        judge = existing.get(entry["name"])
        prompt = _prompt_template(entry["prompt"], project.task_type) if entry["prompt"] else None
        endpoint = endpoints.get(entry["endpoint"]) if entry["endpoint"] else None
        if entry["endpoint"] and endpoint is None:  # withdrawn by staff since the check
            raise Refusal(
                f"judges.{entry['name']}.endpoint: no model endpoint {entry['endpoint']!r} for "
                "this project. Nothing changed.",
                field="judges",
            )
        if judge is None:
            judge_create(
                project=project, **{**entry, "prompt": prompt, "endpoint": endpoint}, by=by
            )
        elif any(_judge_value(judge, f) != entry[f] for f in JUDGE_CHANGEABLE):
            changed = {
                f: {"before": _judge_value(judge, f), "after": entry[f]}
                for f in JUDGE_CHANGEABLE
                if _judge_value(judge, f) != entry[f]
            }
            audit_record(
                project=project,
                actor=by,
                kind=AuditKind.JUDGE_CHANGED,
                summary=f"Changed the judge {judge.name}: {', '.join(changed)} (study file).",
                changes={"judge": judge.name, **changed},
            )
            for field in ("kind", "model", "parameters", "description"):
                setattr(judge, field, entry[field])
            judge.endpoint = endpoint
            judge.prompt = prompt
            if prompt is not None:
                judge.prompt_version = prompt.key
            judge.save()


def _config_change_check(project: Project, config: dict) -> None:
    """Refuse a config change that would make the project's existing answers wrong (the task
    type says which: a questionnaire question's kind), once it has answers."""
    task_type = task_types.get(project.task_type)
    has_answers = (
        Annotation.objects.filter(item__project=project).exists()
        or ExternalAnnotation.objects.filter(item__project=project).exists()
    )
    if not has_answers:
        return
    try:
        before = task_type.validate_config(project.config)
    except serializers.ValidationError:
        return  # the stored config no longer validates: nothing to compare with
    problem = task_type.config_change_problem(
        before=before, after=task_type.validate_config(config)
    )
    if problem:
        raise Refusal(f"{problem} Nothing changed.", code="conflict", field="config")


def study_apply(
    *,
    data: Any,
    user=None,
    dry_run: bool = False,
    slug: str | None = None,
    create_only: bool = False,
    via: str = "study file",
) -> dict:
    """Create or update the project a study file describes. Returns ``{"created", "changes",
    "project"}`` (``project`` is None on a dry run of a new study). ``slug``: the project the
    caller means (the API's URL); the file's slug must match it. ``create_only``: refuse a slug
    that is taken. A change of the guidelines, config or crowd settings records a new settings
    version (``projects.services.settings_version_record``; ``via`` says where it was made)."""
    attrs = _validated(data, create_only=create_only)
    if slug is not None and attrs["slug"].lower() != slug.lower():
        raise Refusal(f"slug: the file is for {attrs['slug']!r}, not {slug!r}.", field="slug")
    with transaction.atomic():
        if slug is not None:
            project = Project.objects.select_for_update(no_key=True).filter(slug=slug).first()
            if project is None and slug != slug.lower():  # stored in lower case (project_for)
                project = (
                    Project.objects.select_for_update(no_key=True).filter(slug=slug.lower()).first()
                )
        else:
            project = project_named(attrs["slug"], for_update=True)
        if project is not None and create_only:
            # Worded for whoever asks, member of that project or not: a slug is an address,
            # unique ignoring case, and no more than that is said of a project they may not see.
            raise Refusal(
                f"slug: the address /p/{attrs['slug'].lower()}/ is not available; "
                "choose another slug.",
                field="slug",
            )
        if project is not None:
            attrs.update(_settings_left_out(project, data))
        before = study_export(project=project) if project is not None else {}
        if (
            project is not None
            and project.task_type != attrs["task_type"]
            and project.items.exists()
        ):
            raise Refusal(
                f"task_type: {project.slug} has items of type {project.task_type}; "
                "its task type cannot change.",
                field="task_type",
            )
        if project is not None and project.task_type == attrs["task_type"]:
            _config_change_check(project, attrs["config"])
        after = {
            **attrs,
            "members": [dict(m) for m in attrs["members"]],
            "judges": [dict(j) for j in attrs["judges"]],
        }
        changes = _changes(before, after)
        if dry_run:
            return {"created": project is None, "changes": changes, "project": project}
        created = project is None
        settings = {key: attrs[key] for key in SETTINGS_FIELDS}  # the project's own fields
        if project is None:
            project = project_create(
                project=Project(slug=attrs["slug"].lower(), **settings),
                by=user,
                via=via,
                members=attrs["members"],
            )
        else:
            _project_update(
                project=project, settings=settings, members=attrs["members"], by=user, via=via
            )
        _judges_apply(project=project, judges=attrs["judges"], by=user)
    return {"created": created, "changes": changes, "project": project}


KEPT_WHEN_LEFT_OUT = ("status", "annotators_per_item", "guidelines", "config", "crowd")


def _settings_left_out(project: Project, data: Any) -> dict[str, Any]:
    """The settings of an existing project that the file leaves out, as they are: a file with
    only a slug, name and task type changes nothing else (as members and judges it does not
    list stay), never resetting guidelines, config or N to their defaults."""
    given = data.keys() if isinstance(data, Mapping) else ()
    return {key: getattr(project, key) for key in KEPT_WHEN_LEFT_OUT if key not in given}


def _project_update(
    *, project: Project, settings: dict[str, Any], members: list, by, via: str
) -> None:
    """Save a study file's settings and members onto its existing project, recording the new
    settings version and the audit entries (a new project: ``projects.services.project_create``)."""
    previous = project_settings(project=project)
    audited = settings_of(project=project)
    for key, value in settings.items():
        setattr(project, key, value)
    project.save()
    settings_version_record(project=project, before=previous, by=by, via=via)
    settings_audit(project=project, actor=by, before=audited, via=via)
    members_apply(project=project, members=members, by=by)


def crowd_json_schema() -> dict:
    """The JSON Schema of a study file's ``crowd`` (the crowd and quality settings)."""
    return json.loads(_schema_text("", get_language() or ""))


def config_json_schema(task_type: str) -> dict:
    """The JSON Schema of a study file's ``config`` for ``task_type``."""
    task_types.get(task_type)  # an unknown task type is named
    return json.loads(_schema_text(task_type, get_language() or ""))


@functools.cache
def _schema_text(task_type: str, language: str) -> str:
    """A schema as JSON text, made once per process and language: every study form and save
    asks for it, and building it instantiates serializers (each a deep copy of its fields); a
    caller gets its own copy to change. ``task_type`` "": the crowd settings."""
    if not task_type:
        return json.dumps(_schema_of(CrowdSettingsSerializer()))
    return json.dumps(_schema_of(task_types.get(task_type).config_serializer()))


def study_json_schema() -> dict:
    """A JSON Schema of study files, generated from the serializers above, the crowd settings
    and each task type's config serializer."""
    study = _schema_of(StudySerializer())
    study["title"] = "Concord study file"
    study["properties"]["crowd"] = crowd_json_schema()
    study["properties"]["guidelines_file"] = {
        "type": "string",
        "description": "Path of a Markdown file, relative to the study file (instead of guidelines).",
    }
    study["allOf"] = [
        {
            "if": {"properties": {"task_type": {"const": t.slug}}},
            "then": {"properties": {"config": config_json_schema(t.slug)}},
        }
        for t in task_types.all_task_types()
    ]
    return study


def _schema_of(field: Any) -> dict:
    # A field whose value the serializer checks by hand (a questionnaire's questions) gives its
    # own schema (``json_schema``, a function).
    own = getattr(field, "json_schema", None)
    if callable(own):
        return own()
    if isinstance(field, serializers.ListSerializer):
        return {"type": "array", "items": _schema_of(field.child)}
    if isinstance(field, serializers.Serializer):
        return _object_schema(field)
    schema = _type_schema(field)
    for attr, key in (
        ("min_value", "minimum"),
        ("max_value", "maximum"),
        ("max_length", "maxLength"),
    ):
        value = getattr(field, attr, None)
        if value is not None:
            schema[key] = float(value) if not isinstance(value, int) else value
    if field.help_text:
        schema["description"] = str(field.help_text)
    default = getattr(field, "default", serializers.empty)
    if default is not serializers.empty and not callable(default):
        schema["default"] = default if not hasattr(default, "as_tuple") else str(default)
    return schema


def _object_schema(serializer: serializers.Serializer) -> dict:
    props = {name: _schema_of(f) for name, f in serializer.fields.items()}
    required = [name for name, f in serializer.fields.items() if f.required]
    schema: dict[str, Any] = {"type": "object", "properties": props, "additionalProperties": False}
    if required:
        schema["required"] = required
    return schema


# A serializer field's JSON type, the first class that matches (a ChoiceField is an enum).
_JSON_TYPES: tuple[tuple[type, Any], ...] = (
    (serializers.BooleanField, "boolean"),
    (serializers.IntegerField, "integer"),
    (serializers.DecimalField, ["number", "string"]),
    (serializers.FloatField, "number"),
    (serializers.CharField, "string"),
)


def _type_schema(field: Any) -> dict[str, Any]:
    if isinstance(field, serializers.ChoiceField):
        return {"enum": list(field.choices)}
    if isinstance(field, serializers.ListField):
        return {"type": "array", "items": _schema_of(field.child)}
    if isinstance(field, serializers.DictField):
        return {"type": "object"}
    for kind, json_type in _JSON_TYPES:
        if isinstance(field, kind):
            return {"type": json_type}
    return {}
