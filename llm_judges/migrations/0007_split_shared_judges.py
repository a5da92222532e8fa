"""Shared judges become per-project judges, with their results; endpoints move to staff records.

Before: a judge was global (unique name), linked to projects by study files (``StudyJudge``) and
by its runs, results and pre-selections; an LLM judge's ``base_url`` and ``api_key_env`` were
parameters. After, for each judge:

* used by no project: it stays as it is, a staff catalogue judge (``project`` blank);
* used by projects P1 < P2 < …: the judge itself becomes P1's; every other project gets a copy
  (same name, settings and prompt) and its runs, results, pre-selection and study link move to
  that copy, so each project keeps exactly its own results and nothing is lost;
* an LLM judge's URL and key variable become a ``ModelEndpoint`` (one per distinct pair), usable
  by those projects only. The upgrade cannot tell who wrote a URL, so a migrated endpoint may
  not reach private, loopback or link-local addresses until staff tick "allow private network"
  in the admin (its description says so).

The built-in ``minilm-similarity`` judge stays in the catalogue (recreated there if projects
took it), so new projects can still copy it.
"""

from urllib.parse import urlparse

from django.db import migrations

BUILTIN = "minilm-similarity"
BUILTIN_SETTINGS = {
    "kind": "embedding",
    "model": "all-MiniLM-L6-v2",
    "parameters": {"items_per_task": 200, "threshold": 0.6, "batch_size": 64},
    "prompt_version": "v1",
    "description": "Offline baseline: sentences whose all-MiniLM-L6-v2 cosine similarity with the "
    "evidence reaches 0.6.",
}
COPIED = ("name", "kind", "model", "parameters", "prompt_version", "prompt_id", "description")


def _projects_using(apps, judge) -> list[int]:
    model = apps.get_model
    used = set(
        model("studies", "StudyJudge")
        .objects.filter(judge=judge)
        .values_list("project_id", flat=True)
    )
    used |= set(
        model("llm_judges", "JudgeRun")
        .objects.filter(judge=judge)
        .values_list("project_id", flat=True)
    )
    used |= set(
        model("llm_judges", "JudgeResult")
        .objects.filter(judge=judge)
        .values_list("item__project_id", flat=True)
        .distinct()
    )
    used |= set(
        model("llm_judges", "Preselection")
        .objects.filter(judge=judge)
        .values_list("project_id", flat=True)
    )
    used |= set(
        model("llm_judges", "PreselectionShown")
        .objects.filter(judge=judge)
        .values_list("assignment__project_id", flat=True)
        .distinct()
    )
    return sorted(used)


def _endpoint(apps, base_url: str, key_env: str, judge_name: str):
    ModelEndpoint = apps.get_model("llm_judges", "ModelEndpoint")
    base_url = base_url.rstrip("/")
    found = ModelEndpoint.objects.filter(base_url=base_url, api_key_env=key_env or "").first()
    if found is not None:
        return found
    stem = (urlparse(base_url).hostname or "endpoint")[:80]
    name, n = stem, 1
    while ModelEndpoint.objects.filter(name=name).exists():
        n += 1
        name = f"{stem}-{n}"
    return ModelEndpoint.objects.create(
        name=name,
        base_url=base_url,
        api_key_env=key_env or "",
        description=f"Created by the upgrade from the settings of the judge {judge_name!r}. "
        "Check the URL; tick 'allow private network' only for a server on your own network.",
    )


def _move(apps, judge, copy, project_id: int) -> None:
    model = apps.get_model
    model("llm_judges", "JudgeRun").objects.filter(judge=judge, project_id=project_id).update(
        judge=copy
    )
    model("llm_judges", "JudgeResult").objects.filter(
        judge=judge, item__project_id=project_id
    ).update(judge=copy)
    model("llm_judges", "Preselection").objects.filter(judge=judge, project_id=project_id).update(
        judge=copy
    )
    model("llm_judges", "PreselectionShown").objects.filter(
        judge=judge, assignment__project_id=project_id
    ).update(judge=copy)
    model("studies", "StudyJudge").objects.filter(judge=judge, project_id=project_id).update(
        judge=copy
    )


def split(apps, schema_editor):
    Judge = apps.get_model("llm_judges", "Judge")
    for judge in list(Judge.objects.filter(project__isnull=True).order_by("pk")):
        parameters = dict(judge.parameters or {})
        base_url = parameters.pop("base_url", None)
        key_env = parameters.pop("api_key_env", "")
        judge.parameters = parameters
        if judge.kind == "llm" and base_url:
            judge.endpoint = _endpoint(apps, str(base_url), str(key_env or ""), judge.name)
        used = _projects_using(apps, judge)
        if used:
            first, *others = used
            for project_id in others:
                copy = Judge.objects.create(
                    project_id=project_id,
                    endpoint=judge.endpoint,
                    **{field: getattr(judge, field) for field in COPIED},
                )
                _move(apps, judge, copy, project_id)
            judge.project_id = first
            if judge.endpoint is not None:
                judge.endpoint.projects.add(*used)
        judge.save()
    if not Judge.objects.filter(project__isnull=True, name=BUILTIN).exists():
        Judge.objects.create(name=BUILTIN, **BUILTIN_SETTINGS)


class Migration(migrations.Migration):
    dependencies = [
        ("llm_judges", "0006_judges_owned_by_projects"),
        ("studies", "0001_initial"),
        ("annotation", "0009_dashboard_counter_triggers"),
    ]

    # Going back keeps the per-project copies (they cannot be merged into one shared judge).
    operations = [migrations.RunPython(split, migrations.RunPython.noop)]
