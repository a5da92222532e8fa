"""Replication bundles: everything needed to reproduce a study, in formats dataset users load.

``bundle_write(project=…, out=…)`` writes a folder:

* ``study.json`` — the study file (:mod:`studies.study_files`) without member accounts;
* ``items`` — external id, kind, group, position, payload, prepared data, gold, the item's
  revision (a researcher's fix moves it) and whether it is left out of agreement (``excluded``,
  loaded back, so the loaded project's agreement is the bundle's);
* ``annotations`` — every current human answer, by the annotator's pseudonym, with active time,
  the settings version and item revision it was made under, its place in the annotator's order (``sequence``) and
  how the item was laid out for them (``presentation``);
* ``annotators`` — pseudonym and qualification state (who the dashboard counts);
* ``judge_results`` — every judge answer or failure, with judge, kind, model, prompt version,
  setting, outcome, message, tokens and latency (no raw replies);
* ``prompts`` — every prompt template record the project's LLM judges use or their runs
  rendered (the task type's shipped record too): name, version, key, task type, wording
  (system, template, variants), output schema, parameters, note and fingerprint; the study
  file names each LLM judge's record (``prompt: {name, version}``);
* ``external_annotations`` — the answers of external coders (annotations collected elsewhere and
  imported), by coder name, with the coder's and the answer's source, time and timestamp;
* ``settings_versions`` — every recorded version of the guidelines, config and crowd settings
  (none when they never changed);
* ``item_notes`` — flags, skips, answers sent back and researchers' comments, people by
  pseudonym (:mod:`studies.services.item_notes`; carried to be read, not loaded back by
  ``bundle_load``: an exclusion, the one note agreement reads, travels in ``items``);
* ``audit`` — the project's audit log, oldest first (``projects.audit``): when, what kind, who
  (a member by pseudonym, else ``staff`` or ``system``) and what changed, without account
  names or invitation notes (``projects.audit.audit_public``);
* each of those tables as JSON Lines and as Parquet (nested fields JSON-encoded), loadable with
  ``datasets.load_dataset("parquet", data_files=…)``;
* ``agreement.json`` — the dashboard's report (every annotator but the disqualified);
* ``README.md`` — a dataset card: what, who, when, licences, how computed, the agreement summary,
  under the Hugging Face dataset-card header (licence, task categories, size, one config per
  non-empty table), so that the owner's ``push_to_hub`` of the folder needs no edits;
* ``manifest.json`` — each file's sha256 and row count.

``bundle_load(directory=…)`` loads a bundle into an instance that does not have the project:
the project, items, annotator accounts named after the pseudonyms (no usable password),
submitted assignments and annotations, external coders and their answers (a bundle written
before they were bundled loads without them), the project's own judges and their results; the
dashboard then gives the same figures.

A bundle is untrusted input (:mod:`studies.bundle_loading` checks it): it is loaded only if its
manifest's checksums match, every row passes the checks an import makes, and it touches nothing
that exists. It grants no role to any existing account (the study's ``members`` are ignored;
the pseudonyms get new accounts, and a bundle whose pseudonym names an existing account is
refused), creates no model endpoint (its LLM judges arrive without one: their results load, and
a researcher chooses an endpoint before running them again) and changes no prompt template: its
prompts are checked as a saved template is and against their fingerprints, then each is this
instance's record of the same name, version and fingerprint, or a new record only the loaded
project's judges and results refer to (see :mod:`studies.bundle_loading`).
"""

from __future__ import annotations

import hashlib
import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db.models import Exists, OuterRef
from django.utils import timezone

from agreement.reports import AnnotatorFilter, ReportOptions, build_report
from agreement.reports.gather import gather
from annotation import task_types
from annotation.models import (
    Annotation,
    ExternalAnnotation,
    Item,
    ItemExclusion,
    readable_isoformat,
)
from core.errors import Refusal
from core.yaml_safety import yaml_dump
from llm_judges.models import Judge, JudgeResult, JudgeRun, PromptTemplate
from llm_judges.services.errors import JudgeError
from llm_judges.services.prompt_templates import template_for
from projects.audit import AuditKind, audit_public, audit_record
from projects.models import Membership, Project, ProjectSettingsVersion
from studies.bundle_loading import bundle_load
from studies.services.item_notes import note_rows
from studies.study_files import study_export

if TYPE_CHECKING:
    from django.contrib.auth.base_user import AbstractBaseUser

TABLES = (
    "items",
    "annotations",
    "annotators",
    "judge_results",
    "prompts",
    "external_annotations",
    "settings_versions",
    "item_notes",
    "audit",
)
NESTED = {
    "payload",
    "prepared",
    "gold",
    "answer",
    "detail",
    "presentation",
    "config",
    "crowd",
    "changes",
    "variants",
    "output_schema",
    "parameters",
    "judges",
}
PROMPT_FIELDS = (
    "name",
    "version",
    "task_type",
    "builtin",
    "system",
    "template",
    "variants",
    "output_schema",
    "parameters",
    "note",
    "fingerprint",
)


def _items(project: Project) -> list[dict]:
    return [
        {
            "external_id": i.external_id,
            "kind": i.kind,
            "group": i.group,
            "position": i.position,
            "payload": i.payload,
            "prepared": i.prepared,
            "gold": i.gold,
            "revision": i.revision,
            # Left out of agreement by the researchers (agreement.json counts without it).
            "excluded": i.excluded,
        }
        for i in Item.objects.filter(project=project)
        .annotate(excluded=Exists(ItemExclusion.objects.filter(item=OuterRef("pk"))))
        .order_by("position", "id")
    ]


def _annotations(project: Project, pseudonyms: dict[int, str]) -> list[dict]:
    rows = (
        Annotation.objects.filter(item__project=project, is_current=True)
        .select_related("item", "assignment")
        .order_by("item__position", "item_id", "annotator_id")
    )
    return [
        {
            "item": a.item.external_id,
            "annotator": pseudonyms.get(a.annotator_id, f"ann-removed-{a.annotator_id}"),
            "answer": a.answer,
            "version": a.version,
            "time_spent_ms": a.time_spent_ms,
            "created_at": a.created_at.isoformat(),
            "reserved_at": a.assignment.reserved_at.isoformat(),
            "settings_version": a.settings_version,
            "item_revision": a.item_revision,
            "sequence": a.assignment.sequence,
            "presentation": a.presentation,
        }
        for a in rows
    ]


def _settings_versions(project: Project) -> list[dict]:
    """The project's recorded settings versions (none for a project never changed: version 1 is
    the study file's settings)."""
    return [
        {
            "number": v.number,
            "guidelines": v.guidelines,
            "config": v.config,
            "crowd": v.crowd,
            "created_at": v.created_at.isoformat(),
            "via": v.via,
        }
        for v in ProjectSettingsVersion.objects.filter(project=project).order_by("number")
    ]


def _judge_results(project: Project) -> list[dict]:
    rows = (
        JudgeResult.objects.filter(item__project=project)
        .select_related("item", "judge")
        .order_by("judge__name", "item__position", "id")
    )
    return [
        {
            "item": r.item.external_id,
            "judge": r.judge.name,
            "kind": r.judge.kind,
            "model": r.judge.model,
            "prompt_version": r.prompt_version,
            "setting": r.setting,
            "presentation": r.presentation,
            "run": r.run_id,
            "outcome": r.status,
            "answer": r.answer if r.status == JudgeResult.Status.OK else None,
            "message": r.error,
            "prompt_tokens": r.prompt_tokens,
            "completion_tokens": r.completion_tokens,
            "latency_ms": r.latency_ms,
        }
        for r in rows
    ]


def _prompts(project: Project) -> tuple[list[dict], dict[str, dict]]:
    """The prompt template records the project's LLM judges use (their own, or the task type's
    shipped record of their built-in version) and its runs rendered, as rows; and each LLM
    judge's ``{name, version}`` for the study file."""
    records: dict[int, PromptTemplate] = {}
    refs: dict[str, dict] = {}
    for judge in Judge.objects.filter(project=project, kind=Judge.Kind.LLM).select_related(
        "prompt"
    ):
        try:
            template = template_for(judge=judge, project=project)
        except JudgeError:  # a version this instance does not ship: its runs' records only
            continue
        records[template.pk] = template
        refs[judge.name] = {"name": template.name, "version": template.version}
    runs = JudgeRun.objects.filter(
        project=project, judge__kind=Judge.Kind.LLM, prompt__isnull=False
    ).select_related("prompt")
    for run in runs:
        assert run.prompt is not None
        records[run.prompt.pk] = run.prompt
    rows = []
    for template in sorted(records.values(), key=lambda t: (t.name, t.version)):
        ref = {"name": template.name, "version": template.version}
        rows.append(
            {
                **{name: getattr(template, name) for name in PROMPT_FIELDS},
                "key": template.key,
                "judges": sorted(name for name, used in refs.items() if used == ref),
            }
        )
    return rows, refs


def _external_annotations(project: Project) -> list[dict]:
    rows = (
        ExternalAnnotation.objects.filter(item__project=project)
        .with_readable_time()
        .select_related("item", "coder")
        .order_by("coder__name", "item__position", "item_id")
    )
    return [
        {
            "item": a.item.external_id,
            "coder": a.coder.name,
            "coder_source": a.coder.source,
            "answer": a.answer,
            "time_spent_ms": a.time_spent_ms,
            "annotated_at": readable_isoformat(a.annotated_at_text),
            "source": a.source,
        }
        for a in rows
    ]


def project_report(project: Project) -> dict:
    annotator_filter = AnnotatorFilter()
    return build_report(
        gather(project=project, annotator_filter=annotator_filter, options=ReportOptions()),
        annotator_filter,
    )


def _write_table(out: Path, name: str, rows: list[dict]) -> list[Path]:
    import pyarrow as pa
    import pyarrow.parquet as pq

    jsonl = out / f"{name}.jsonl"
    jsonl.write_text(
        "".join(json.dumps(r, ensure_ascii=False, sort_keys=True) + "\n" for r in rows),
        encoding="utf-8",
    )
    flat = [
        {
            k: json.dumps(v, ensure_ascii=False, sort_keys=True) if k in NESTED else v
            for k, v in r.items()
        }
        for r in rows
    ]
    parquet = out / f"{name}.parquet"
    table = pa.Table.from_pylist(flat) if flat else pa.table({})
    pq.write_table(table, parquet)
    return [jsonl, parquet]


def _pseudonymised(value: Any, names: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {names.get(k, k): _pseudonymised(v, names) for k, v in value.items()}
    if isinstance(value, list):
        return [_pseudonymised(v, names) for v in value]
    if isinstance(value, str):
        return names.get(value, value)
    return value


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def bundle_write(
    *, project: Project, out: Path, licence: str = "other", by: AbstractBaseUser | None = None
) -> list[Path]:
    """Write the project's replication bundle into ``out`` (created; must be empty).
    ``licence``: the dataset card's licence identifier (Hugging Face's, e.g. ``cc-by-4.0``;
    ``other`` by default: the card's text explains). ``by``: who, for the project's audit log
    (its entry is written first, so the bundle's own ``audit`` table ends with it)."""
    if not LICENCE.match(licence):
        raise Refusal(
            f"{licence[:40]!r} is not a licence identifier (e.g. cc-by-4.0, mit, other).",
            field="licence",
        )
    out.mkdir(parents=True, exist_ok=True)
    if any(out.iterdir()):
        raise Refusal(f"{out} is not empty; give a new folder.", field="out")
    audit_record(
        project=project,
        actor=by,
        kind=AuditKind.BUNDLE_WRITTEN,
        summary=f"Wrote the replication bundle (licence {licence}).",
        changes={"licence": licence},
    )
    members = Membership.objects.filter(project=project, role=Membership.Role.ANNOTATOR)
    pseudonyms = {m.user_id: m.pseudonym for m in members}
    prompt_rows, prompt_refs = _prompts(project)
    tables = {
        "items": _items(project),
        "annotations": _annotations(project, pseudonyms),
        "annotators": [
            {"annotator": m.pseudonym, "qualification": m.qualification}
            for m in members.order_by("pseudonym")
        ],
        "judge_results": _judge_results(project),
        "prompts": prompt_rows,
        "external_annotations": _external_annotations(project),
        "settings_versions": _settings_versions(project),
        "item_notes": list(note_rows(project=project)),
        "audit": audit_public(project=project),
    }
    study = {**study_export(project=project), "members": []}
    for entry in study.get("judges", []):  # each LLM judge names the record it uses
        if entry["name"] in prompt_refs:
            entry["prompt"] = prompt_refs[entry["name"]]
    written = [out / "study.json"]
    (out / "study.json").write_text(
        json.dumps(study, indent=2, ensure_ascii=False), encoding="utf-8"
    )
    for name, rows in tables.items():
        written += _write_table(out, name, rows)
    # Annotators are published by pseudonym only: account names in the report become pseudonyms.
    names = {
        m.user.username: m.pseudonym
        for m in Membership.objects.filter(project=project).select_related("user")
    }
    report = _pseudonymised(project_report(project), names)
    (out / "agreement.json").write_text(
        json.dumps(report, indent=2, ensure_ascii=False, default=str), encoding="utf-8"
    )
    written.append(out / "agreement.json")
    card = _card_header(project, tables, licence) + _card(project, tables, report)
    (out / "README.md").write_text(card, encoding="utf-8")
    written.append(out / "README.md")
    manifest = {
        "project": project.slug,
        "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "files": {
            p.name: {
                "sha256": _sha256(p),
                **({"rows": len(tables[p.stem])} if p.stem in tables else {}),
            }
            for p in written
        },
    }
    (out / "manifest.json").write_text(json.dumps(manifest, indent=2), encoding="utf-8")
    return [*written, out / "manifest.json"]


LICENCE = re.compile(r"^[a-z0-9][a-z0-9.+-]{0,63}$")
_SIZES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def _card_header(project: Project, tables: dict, licence: str) -> str:
    """The Hugging Face dataset-card header (YAML between ``---`` lines): one config per
    non-empty table, its Parquet file; the annotations are the default config."""
    items = len(tables["items"])
    size = next((label for bound, label in _SIZES if items < bound), "n>1M")
    header = {
        "pretty_name": project.name,
        "license": licence,
        "task_categories": list(task_types.get(project.task_type).dataset_task_categories),
        "tags": ["concord", "annotation", project.task_type.replace("_", "-")],
        "size_categories": [size],
        "configs": [
            {
                "config_name": name,
                "data_files": f"{name}.parquet",
                **({"default": True} if name == "annotations" else {}),
            }
            for name in TABLES
            if tables[name]
        ],
    }
    return f"---\n{yaml_dump(header)}---\n\n"


def _card(project: Project, tables: dict, report: dict) -> str:
    summary = report.get("section", {}).get("summary", []) if report.get("section") else []
    figures = "\n".join(f"- {f['label']}: {f['value']}" for f in summary) or "- (no figures yet)"
    agreement = report.get("tables", {}).get("agreement", {}).get("rows", [])
    alphas = "\n".join(
        f"- α ({row.get('field')}, {row.get('distance', '')}): {row.get('alpha')}"
        for row in agreement
    )
    judges = sorted({r["judge"] for r in tables["judge_results"]})
    return f"""# {project.name}

Replication bundle of the Concord project `{project.slug}` (task type `{project.task_type}`),
written {timezone.now():%Y-%m-%d}.

## What
- {len(tables["items"])} items (`items.*`: payload as imported, prepared data, gold).
- {len(tables["annotations"])} current human annotations by {len(tables["annotators"])}
  annotators, named by pseudonym (`annotations.*`, `annotators.*`).
- {len(tables["external_annotations"])} answers of
  {len({r["coder"] for r in tables["external_annotations"]})} external coders (annotations
  collected elsewhere and imported, `external_annotations.*`), counted by the dashboard like
  annotators.
- {len(tables["judge_results"])} judge results{f" ({', '.join(judges)})" if judges else ""}
  (`judge_results.*`; failures keep the server's message, no raw replies).
- {len(tables["prompts"])} prompt templates the LLM judges used (`prompts.*`: wording, output
  schema, parameters and sha256 fingerprint; `study.json` names each judge's).
- {len(tables["audit"])} entries of the project's audit log (`audit.jsonl`, `audit.parquet`): who changed its
  settings, guidelines, members, invitations and judges, and who imported, exported and bundled
  its data, when; people by pseudonym (`staff`, `system` otherwise), no account names.
- `study.json`: the project's settings (task config, guidelines, crowd and quality settings).
- `agreement.json`: the dashboard's report, computed by Concord's agreement code over every
  annotator except the disqualified, regular items only, current answers only.

Every table is JSON Lines and Parquet (nested fields JSON-encoded); for example
`datasets.load_dataset("parquet", data_files="annotations.parquet")`.
`manifest.json` lists each file's sha256.

## Figures
{figures}
{alphas}

## Licences
The items keep the licence of the data they were imported from (see the project's source, e.g.
the `LICENSE` file beside the data in Concord's `data/` folder); the annotations are released by
the study's researchers under the terms they choose. Annotators appear only by pseudonym.

## Reproduce
`manage.py bundle_load DIR` loads this folder into a Concord instance without the project; its
dashboard then gives the same figures.
"""


__all__ = ["TABLES", "bundle_load", "bundle_write", "project_report"]
