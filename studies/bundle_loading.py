"""Loading a replication bundle (``manage.py bundle_load DIR``): untrusted input, checked first.

A bundle comes from elsewhere, so it is read as an import is: nothing is written until every
file has been checked, and then everything is written in one transaction.

* ``manifest.json`` lists every file with its sha256 (and a JSON Lines file's rows); a listed
  file that is missing, a link, different or of another length, and a file this loader reads
  that is not listed, are refused (a bundle edited after it was written is not a replication
  bundle). A line longer than ``CONCORD_MAX_RECORD_CHARS`` is refused as an import refuses it.
* ``study.json`` goes through the same serializers as a study file; its ``members`` are ignored
  (a bundle grants no role), and its judges become the new project's own judges without an
  endpoint (a bundle creates no endpoint); an LLM judge gets the prompt record the study file
  names, from the bundle's ``prompts.jsonl``.
* ``prompts.jsonl`` (bundles written before it was bundled load without it, their judges keeping
  the prompt version their results were stored under) is checked as a saved template is (the
  task type's placeholders, a JSON schema, sampling parameters only; the loaded project's task
  type only), bounded (``MAX_PROMPTS`` records, ``PROMPT_TEXT`` characters a text), and each
  record's fingerprint must be its content's. A bundle never changes a template of this
  instance: a record is this instance's of the same name and version (or shipped version) when
  its fingerprint is the same; otherwise it is created, under its own name if that is free, else
  as "NAME (slug)", and only the loaded project's judges and results refer to it (their prompt
  version follows its key).
* Items pass the task type's payload check; answers, dates, numbers and texts are checked as
  an import checks them. A bad row is refused naming its file, line and field.
* The pseudonyms become new accounts (no usable password); a pseudonym whose account exists is
  refused, as is a project whose slug exists: a bundle never adds to what is here.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import IntegrityError, transaction
from django.db.models import OuterRef, Subquery
from django.utils import timezone
from rest_framework import serializers

from annotation import task_types
from annotation.models import (
    Annotation,
    Assignment,
    ExternalAnnotation,
    ExternalCoder,
    Item,
    ItemExclusion,
)
from annotation.task_types import PayloadError
from core.errors import Refusal
from core.json_safety import first_problem
from llm_judges.models import Judge, JudgeResult, PromptTemplate
from llm_judges.parameters import clean_model, clean_parameters
from llm_judges.services.errors import JudgeError
from llm_judges.services.prompt_templates import clean_template, shipped_template
from projects.audit import AuditKind, audit_record
from projects.models import Membership, Project, ProjectSettingsVersion
from studies.services.external_annotations import annotated_at
from studies.study_files import JudgeEntrySerializer, error_paths, study_apply

REQUIRED = ("study.json", "items.jsonl", "annotations.jsonl", "annotators.jsonl")
OPTIONAL = (
    "judge_results.jsonl",
    "prompts.jsonl",
    "external_annotations.jsonl",
    "settings_versions.jsonl",
    "audit.jsonl",
)
MAX_PROMPTS = 200  # prompt records a bundle may hold
PROMPT_TEXT = 100_000  # characters of a prompt's system message, template or variant
MAX_COUNT = 10**12  # tokens, milliseconds: beyond any real value, within the columns
PSEUDONYM_LENGTH = 40


class BundleRefused(Refusal):
    """The bundle is refused; nothing was loaded."""

    def __init__(self, message: str, *, field: str = "bundle") -> None:
        super().__init__(f"{message} Nothing was loaded.", field=field)


# --- reading ---------------------------------------------------------------------------------


def _checked_files(directory: Path) -> dict[str, Path]:
    """The bundle's files: every file the manifest lists (those this loader reads and the
    others: the Parquet twins, the dataset card, the report) a plain file of the folder, not a
    link, matching its sha256 and, for a JSON Lines file, its row count; the files this loader
    reads each listed."""
    manifest_path = directory / "manifest.json"
    if not manifest_path.is_file() or manifest_path.is_symlink():
        raise BundleRefused(f"{directory} is not a Concord bundle: manifest.json is missing.")
    manifest = _json(manifest_path)
    listed = manifest.get("files") if isinstance(manifest, dict) else None
    if not isinstance(listed, dict):
        raise BundleRefused("manifest.json: 'files' must map each file to its sha256.")
    odd = sorted(
        str(name) for name in listed if Path(str(name)).name != name or name in ("", ".", "..")
    )
    if odd:
        raise BundleRefused(f"manifest.json: {odd[0]!r} is not a file of the bundle's folder.")
    for name in (*REQUIRED, *OPTIONAL):
        if name in REQUIRED and name not in listed and not (directory / name).exists():
            raise BundleRefused(f"{directory} is not a Concord bundle: {name} is missing.")
        if name not in listed and (directory / name).exists():
            raise BundleRefused(f"manifest.json does not list {name}.")
    for name, entry in listed.items():
        _check_listed(directory / name, entry)
    return {name: directory / name for name in (*REQUIRED, *OPTIONAL) if name in listed}


def _check_listed(path: Path, entry: Any) -> None:
    """``path`` is what the manifest's ``entry`` says: a plain file (a link is refused: a
    bundle is a folder of its own files), its sha256, its rows (non-blank lines of a JSON Lines
    file) where the entry gives them. Read in 1 MiB blocks: memory stays flat."""
    name = path.name
    expected = entry.get("sha256") if isinstance(entry, dict) else None
    if not isinstance(expected, str):
        raise BundleRefused(f"manifest.json: {name} has no sha256.")
    if path.is_symlink():
        raise BundleRefused(f"{name} is a link; a bundle's files must be the folder's own.")
    if not path.is_file():
        raise BundleRefused(f"{name} is listed in manifest.json but is not in the folder.")
    digest, lines, last = hashlib.sha256(), 0, b"\n"
    with path.open("rb") as data:
        while block := data.read(2**20):
            digest.update(block)
            lines += block.count(b"\n")
            last = block[-1:]
    if digest.hexdigest() != expected:
        raise BundleRefused(
            f"{name} does not match its sha256 in manifest.json (changed after the bundle was "
            "written)."
        )
    rows = entry.get("rows")
    if path.suffix == ".jsonl" and rows is not None:
        found = lines + (last != b"\n")  # a last line without its newline counts
        if found != rows:
            raise BundleRefused(f"{name} has {found:,} lines; manifest.json says {rows!r} rows.")


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError, JSONDecodeError too
        raise BundleRefused(f"{path.name} is not valid JSON ({exc}).") from None


def _rows(path: Path | None) -> Iterator[tuple[str, dict]]:
    """``(location, row)`` of a JSON Lines file; a line that is not a JSON object, or longer
    than an import's record may be (``CONCORD_MAX_RECORD_CHARS``), is refused naming it."""
    if path is None:
        return
    most = settings.CONCORD_MAX_RECORD_CHARS
    with path.open(encoding="utf-8") as lines:
        number = 0
        while line := lines.readline(most + 2):  # never more than a record's length in memory
            number += 1
            where = f"{path.name} line {number}"
            if len(line.rstrip("\r\n")) > most:
                raise BundleRefused(
                    f"{where}: longer than {most:,} characters, the most a record may have "
                    "(setting CONCORD_MAX_RECORD_CHARS)."
                )
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except (ValueError, RecursionError) as exc:  # JSONDecodeError, 5,000-digit numbers
                raise BundleRefused(f"{where}: not valid JSON ({exc}).") from None
            if not isinstance(row, dict):
                raise BundleRefused(f"{where}: must be a JSON object.")
            yield where, row


# --- checks ----------------------------------------------------------------------------------


def _text(row: dict, key: str, where: str, *, limit: int, blank: bool = True) -> str:
    value = row.get(key, "" if blank else None)
    if value is None and blank:
        value = ""
    if not isinstance(value, str) or (not blank and not value) or len(value) > limit:
        raise BundleRefused(f"{where}: {key} must be text of at most {limit} characters.")
    _storable(value, key, where)
    return value


def _count(row: dict, key: str, where: str, *, minimum: int = 0, optional: bool = True):
    value = row.get(key)
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= MAX_COUNT:
        raise BundleRefused(f"{where}: {key} must be a whole number from {minimum} to {MAX_COUNT}.")
    return value


def _flag(row: dict, key: str, where: str) -> bool:
    value = row.get(key, False)
    if not isinstance(value, bool):
        raise BundleRefused(f"{where}: {key} must be true or false.")
    return value


def _object(row: dict, key: str, where: str, *, optional: bool = False) -> dict | None:
    value = row.get(key)
    if value is None and optional:
        return None
    if not isinstance(value, dict):
        raise BundleRefused(f"{where}: {key} must be a JSON object.")
    _storable(value, key, where)
    return value


def _storable(value: Any, key: str, where: str) -> None:
    problem = first_problem(value)
    if problem is not None:
        path, message = problem
        raise BundleRefused(f"{where}: {'.'.join([key, *path])}: {message}.")


def _moment(row: dict, key: str, where: str) -> datetime | None:
    """A timestamp within the bounds an annotation import accepts (1990 to tomorrow)."""
    value = row.get(key)
    if value is None:
        return None

    def refuse(expected: str, field: str) -> BundleRefused:
        return BundleRefused(f"{where}: {key} must be {expected}.")

    return annotated_at(value=value, refuse=refuse)


# --- the parts of a bundle -------------------------------------------------------------------


@dataclass
class _Loaded:
    project: Project
    items: dict[str, Item] = field(default_factory=dict)
    items_by_pk: dict[int, Item] = field(default_factory=dict)
    accounts: dict[str, Any] = field(default_factory=dict)
    judges: dict[str, Judge] = field(default_factory=dict)
    # The bundle's prompt records by (name, version), as this instance's records, and the
    # bundle's prompt keys (results' prompt_version) as those records' keys.
    prompts: dict[tuple[str, int], PromptTemplate] | None = None
    prompt_keys: dict[str, str] = field(default_factory=dict)


def _study(path: Path) -> tuple[dict, list]:
    """The study file's data with no members, and its judge entries (loaded apart)."""
    study = _json(path)
    if not isinstance(study, dict):
        raise BundleRefused("study.json must hold one object.")
    judges = study.get("judges", [])
    if not isinstance(judges, list):
        raise BundleRefused("study.json: judges must be a list.", field="judges")
    return {**study, "members": [], "judges": []}, judges


def _judges(loaded: _Loaded, entries: list, prompt_versions: dict[str, str]) -> None:
    """The study's judges as the project's own, without endpoint; an LLM judge with the prompt
    record the study file names (from ``prompts.jsonl``; a bundle without one: none)."""
    for index, entry in enumerate(entries):
        where = f"study.json judges[{index}]"
        serializer = JudgeEntrySerializer(data=entry)
        try:
            serializer.is_valid(raise_exception=True)
            data = serializer.validated_data
            model = clean_model(data["kind"], data["model"])
            parameters = clean_parameters(data["kind"], data["parameters"])
        except serializers.ValidationError as exc:
            raise BundleRefused(f"{where}: {_first(exc.detail)}") from None
        if data["name"] in loaded.judges:
            raise BundleRefused(f"{where}: the judge {data['name']!r} is listed twice.")
        version = prompt_versions.get(data["name"], "v1")
        loaded.judges[data["name"]] = Judge.objects.create(
            project=loaded.project,
            name=data["name"],
            kind=data["kind"],
            model=model,
            parameters=parameters,
            prompt_version=loaded.prompt_keys.get(version, version),
            prompt=_judge_prompt(loaded, data, where),
            description=data["description"],
        )


def _judge_prompt(loaded: _Loaded, data: dict, where: str) -> PromptTemplate | None:
    ref = data.get("prompt")
    if not ref or loaded.prompts is None:
        return None
    if data["kind"] != Judge.Kind.LLM:
        raise BundleRefused(f"{where}: prompt: prompt templates are for LLM judges.")
    template = loaded.prompts.get((ref["name"], ref["version"]))
    if template is None:
        raise BundleRefused(
            f"{where}: prompt: {ref['name']!r} version {ref['version']} is not in prompts.jsonl."
        )
    return template


# --- prompts ---------------------------------------------------------------------------------


def _prompt_content(loaded: _Loaded, row: dict, where: str) -> dict:
    """A prompt record's content, bounded and checked as a saved template is."""
    task_type = _text(row, "task_type", where, limit=50, blank=False)
    if task_type != loaded.project.task_type:
        raise BundleRefused(
            f"{where}: task_type: {task_type!r} is not the study's ({loaded.project.task_type})."
        )
    variants = _object(row, "variants", where, optional=True) or {}
    for name, text in variants.items():
        if not isinstance(text, str) or len(name) > 100 or len(text) > PROMPT_TEXT:
            raise BundleRefused(
                f"{where}: variants.{name[:100]}: must be text of at most {PROMPT_TEXT} characters."
            )
    schema = _object(row, "output_schema", where, optional=True)
    try:
        return clean_template(
            task_type=task_type,
            template=_text(row, "template", where, limit=PROMPT_TEXT, blank=False),
            system=_text(row, "system", where, limit=PROMPT_TEXT),
            variants=variants,
            output_schema=schema,
            parameters=_object(row, "parameters", where, optional=True) or {},
        )
    except JudgeError as exc:
        raise BundleRefused(f"{where}: {exc.field or 'template'}: {exc.message}") from None


def _prompts(loaded: _Loaded, path: Path | None) -> None:
    """The bundle's prompt records as this instance's (see the module doc); nothing existing
    changes."""
    if path is None:
        return
    loaded.prompts = {}
    for index, (where, row) in enumerate(_rows(path)):
        if index >= MAX_PROMPTS:
            raise BundleRefused(f"prompts.jsonl: more than {MAX_PROMPTS} prompt records.")
        name = _text(row, "name", where, limit=100, blank=False)
        version = _count(row, "version", where, minimum=1, optional=False)
        if version > 2**31 - 1:
            raise BundleRefused(f"{where}: version must be at most {2**31 - 1}.")
        if (name, version) in loaded.prompts:
            raise BundleRefused(f"{where}: {name!r} version {version} is listed twice.")
        builtin = _text(row, "builtin", where, limit=20)
        note = _text(row, "note", where, limit=PROMPT_TEXT)
        candidate = PromptTemplate(
            name=name, version=version, note=note, **_prompt_content(loaded, row, where)
        )
        fingerprint = candidate.compute_fingerprint()
        if row.get("fingerprint") != fingerprint:
            raise BundleRefused(
                f"{where}: fingerprint: not the sha256 of the record's content (changed after "
                "it was used, or not Concord's)."
            )
        candidate.fingerprint = fingerprint
        local = _local_prompt(loaded, candidate, builtin, where)
        loaded.prompts[(name, version)] = local
        loaded.prompt_keys[builtin or f"{name}@{version}"] = local.key


def _local_prompt(
    loaded: _Loaded, candidate: PromptTemplate, builtin: str, where: str
) -> PromptTemplate:
    """This instance's record of the same content (same name and version, or the shipped record
    of the same built-in version), else a new record that nothing here uses yet."""
    if builtin:
        try:
            shipped = shipped_template(task_type=candidate.task_type, version=builtin)
        except JudgeError:
            shipped = None
        if shipped is not None and shipped.fingerprint == candidate.fingerprint:
            return shipped
    for name in dict.fromkeys([candidate.name, f"{candidate.name} ({loaded.project.slug})"[:100]]):
        if builtin and name == candidate.name:
            continue  # the shipped name is this instance's numbering: never taken over
        existing = PromptTemplate.objects.filter(name=name, version=candidate.version).first()
        if existing is None:
            candidate.name = name
            candidate.note = f"Loaded from the replication bundle of {loaded.project.slug}. " + (
                candidate.note
            )
            candidate.save()
            return candidate
        if existing.fingerprint == candidate.fingerprint and existing.task_type == (
            candidate.task_type
        ):
            return existing
    raise BundleRefused(
        f"{where}: the prompt {candidate.name!r} version {candidate.version} differs from this "
        "instance's record of that name, and its bundle name is taken too."
    )


def _first(detail: Any) -> str:
    if isinstance(detail, dict):
        key, value = next(iter(detail.items()))
        return f"{key}: {_first(value)}"
    if isinstance(detail, list) and detail:
        return _first(detail[0])
    return str(detail)


def _items(loaded: _Loaded, path: Path) -> None:
    task_type = task_types.get(loaded.project.task_type)
    config = task_type.validate_config(loaded.project.config)
    kinds = set(Item.Kind.values)
    rows, excluded = [], []
    for where, row in _rows(path):
        external_id = _text(row, "external_id", where, limit=255, blank=False)
        if external_id in loaded.items:
            raise BundleRefused(f"{where}: the item {external_id!r} is listed twice.")
        if row.get("kind") not in kinds:
            raise BundleRefused(f"{where}: kind must be one of {', '.join(sorted(kinds))}.")
        payload = _object(row, "payload", where)
        try:
            validated = task_type.validate_payload(payload)
        except PayloadError as exc:
            raise BundleRefused(f"{where}: payload: {exc}") from None
        gold = _object(row, "gold", where, optional=True)
        _gold_check(task_type, config, validated, external_id, gold, where)
        item = Item(
            project=loaded.project,
            external_id=external_id,
            kind=row["kind"],
            group=_text(row, "group", where, limit=200),
            position=_count(row, "position", where, optional=False),
            payload=payload,
            prepared=_object(row, "prepared", where),
            gold=gold,
            revision=_count(row, "revision", where, minimum=1) or 1,
        )
        loaded.items[external_id] = item
        rows.append(item)
        if _flag(row, "excluded", where):
            excluded.append(item)
    Item.objects.bulk_create(rows, batch_size=1000)
    loaded.items_by_pk = {item.pk: item for item in rows}
    ItemExclusion.objects.bulk_create(
        [ItemExclusion(item=item, note="left out of agreement in the bundle") for item in excluded],
        batch_size=1000,
    )


def _gold_check(task_type, config, payload: dict, external_id: str, gold, where: str) -> None:
    """An item's gold is what its payload gives (the task type derives it on import): a bundle
    cannot bring gold of its own."""
    try:
        prepared = task_type.prepare(dict(payload), config=config)
    except PayloadError as exc:
        raise BundleRefused(f"{where}: payload: {exc}") from None
    derived = next((p for p in prepared if p.external_id == external_id), None)
    if derived is None:
        raise BundleRefused(
            f"{where}: external_id {external_id!r} is not an item its payload gives."
        )
    if json.loads(json.dumps(derived.gold)) != gold:
        raise BundleRefused(f"{where}: gold is not what the item's payload gives.")


def _item(loaded: _Loaded, row: dict, where: str) -> Item:
    item = loaded.items.get(row.get("item")) if isinstance(row.get("item"), str) else None
    if item is None:
        raise BundleRefused(f"{where}: item {row.get('item')!r} is not in items.jsonl.")
    return item


def _account(loaded: _Loaded, pseudonym: Any, where: str):
    """A new account for a pseudonym (no usable password: it cannot log in)."""
    if pseudonym in loaded.accounts:
        return loaded.accounts[pseudonym]
    if (
        not isinstance(pseudonym, str)
        or not pseudonym
        or len(pseudonym) > PSEUDONYM_LENGTH
        or not all(c.isalnum() or c in "-_" for c in pseudonym)
    ):
        raise BundleRefused(f"{where}: a pseudonym is letters, digits, - and _ (at most 40).")
    username = f"{loaded.project.slug}-{pseudonym}"
    users = get_user_model()
    if users.objects.filter(username=username).exists():
        raise BundleRefused(
            f"{where}: an account {username!r} exists here already; a bundle gives its "
            "annotators new accounts and never adds answers to an existing one."
        )
    account = users(username=username)
    account.set_unusable_password()
    account.save()
    loaded.accounts[pseudonym] = account
    return account


def _annotators(loaded: _Loaded, path: Path) -> None:
    qualifications = set(Membership.Qualification.values)
    for where, row in _rows(path):
        if row.get("annotator") in loaded.accounts:
            raise BundleRefused(f"{where}: the annotator {row['annotator']!r} is listed twice.")
        if row.get("qualification") not in qualifications:
            raise BundleRefused(
                f"{where}: qualification must be one of {', '.join(sorted(qualifications))}."
            )
        if Membership.objects.filter(pseudonym=row.get("annotator")).exists():
            raise BundleRefused(
                f"{where}: the pseudonym {row.get('annotator')!r} is in use here already "
                "(pseudonyms are unique across the instance)."
            )
        Membership.objects.create(
            project=loaded.project,
            user=_account(loaded, row.get("annotator"), where),
            role=Membership.Role.ANNOTATOR,
            qualification=row["qualification"],
            pseudonym=row["annotator"],
        )


def _annotations(loaded: _Loaded, path: Path) -> None:
    """Submitted assignments and their annotations, written in bulk once every row is checked;
    an answer of a removed member is kept under an account of its own (not a member). Answers
    are checked as a submitted answer is."""
    task_type = task_types.get(loaded.project.task_type)
    now = timezone.now()
    counts: Counter[int] = Counter()
    seen: set[tuple[int, str]] = set()
    rows = []
    for sequence, (where, row) in enumerate(_rows(path), start=1):
        item = _item(loaded, row, where)
        account = _account(loaded, row.get("annotator"), where)
        if (item.pk, row["annotator"]) in seen:
            raise BundleRefused(f"{where}: a second answer of {row['annotator']} to this item.")
        seen.add((item.pk, row["annotator"]))
        presentation = _object(row, "presentation", where, optional=True) or {}
        # When it was made, as the bundle says (a bundle written before reserved_at was bundled:
        # reserved when submitted); the load's time only where the bundle gives none.
        submitted = _moment(row, "created_at", where) or now
        reserved = _moment(row, "reserved_at", where) or submitted
        assignment = Assignment(
            project=loaded.project,
            item=item,
            annotator=account,
            state=Assignment.State.SUBMITTED,
            reserved_at=reserved,
            expires_at=submitted,
            submitted_at=submitted,
            sequence=_count(row, "sequence", where, minimum=1) or sequence,
            presentation=presentation,
        )
        answer = _object(row, "answer", where)
        checked = task_type.answer_serializer(data=answer, context={"item": item})
        if not checked.is_valid():
            raise BundleRefused(f"{where}: {error_paths(checked.errors, 'answer')[0]}")
        annotation = Annotation(
            item=item,
            annotator=account,
            answer=answer,
            version=_count(row, "version", where, minimum=1, optional=False),
            time_spent_ms=_count(row, "time_spent_ms", where),
            presentation=presentation,
            settings_version=_count(row, "settings_version", where, minimum=1),
            item_revision=_item_revision(row, item, where),
        )
        rows.append((assignment, annotation))
        if item.kind == Item.Kind.REGULAR:
            counts[item.pk] += 1
    Assignment.objects.bulk_create([a for a, _ in rows], batch_size=2000)
    for assignment, annotation in rows:
        annotation.assignment = assignment
    Annotation.objects.bulk_create([a for _, a in rows], batch_size=2000)
    # bulk_create set created_at to now (auto_now_add): the time the bundle gives, in one
    # statement over the new project's answers (not a CASE per row of every batch).
    Annotation.objects.filter(item__project=loaded.project).update(
        created_at=Subquery(
            Assignment.objects.filter(pk=OuterRef("assignment_id")).values("submitted_at")[:1]
        )
    )
    counted = [loaded.items_by_pk[pk] for pk in counts]
    for item in counted:
        item.assigned_count = counts[item.pk]
    Item.objects.bulk_update(counted, ["assigned_count"], batch_size=1000)


def _item_revision(row: dict, item: Item, where: str) -> int | None:
    """The item's revision the answer was made on: one the item has had."""
    revision = _count(row, "item_revision", where, minimum=1)
    if revision is not None and revision > item.revision:
        raise BundleRefused(
            f"{where}: item_revision {revision} is later than the item's revision {item.revision}."
        )
    return revision


def _judge_prompt_versions(path: Path | None) -> dict[str, str]:
    """Each judge's prompt version: the one most of its results (as annotators see the items)
    were stored under."""
    versions: dict[str, Counter[str]] = {}
    for _, row in _rows(path):
        if isinstance(row.get("judge"), str) and isinstance(row.get("prompt_version"), str):
            if not row.get("presentation"):
                versions.setdefault(row["judge"], Counter())[row["prompt_version"][:120]] += 1
    return {name: counter.most_common(1)[0][0] for name, counter in versions.items()}


def _judge_results(loaded: _Loaded, path: Path | None) -> None:
    statuses = set(JudgeResult.Status.values)
    results = []
    for where, row in _rows(path):
        judge = loaded.judges.get(row.get("judge")) if isinstance(row.get("judge"), str) else None
        if judge is None:
            raise BundleRefused(f"{where}: judge {row.get('judge')!r} is not in study.json.")
        if row.get("outcome") not in statuses:
            raise BundleRefused(f"{where}: outcome must be one of {', '.join(sorted(statuses))}.")
        version = _text(row, "prompt_version", where, limit=120, blank=False)
        results.append(
            JudgeResult(
                item=_item(loaded, row, where),
                judge=judge,
                prompt_version=loaded.prompt_keys.get(version, version),
                setting=_text(row, "setting", where, limit=40),
                presentation=_text(row, "presentation", where, limit=20),
                status=row["outcome"],
                answer=_object(row, "answer", where, optional=True),
                error=_text(row, "message", where, limit=10_000),
                prompt_tokens=_count(row, "prompt_tokens", where),
                completion_tokens=_count(row, "completion_tokens", where),
                latency_ms=_count(row, "latency_ms", where),
            )
        )
    JudgeResult.objects.bulk_create(results, batch_size=2000)


def _external(loaded: _Loaded, path: Path | None) -> None:
    """The external coders and their answers, as stored (answers in the stored shape)."""
    coders: dict[str, ExternalCoder] = {}
    answers = []
    for where, row in _rows(path):
        name = _text(row, "coder", where, limit=100, blank=False)
        coder = coders.get(name)
        if coder is None:
            coder = coders[name] = ExternalCoder.objects.create(
                project=loaded.project,
                name=name,
                source=_text(row, "coder_source", where, limit=200),
            )
        answers.append(
            ExternalAnnotation(
                coder=coder,
                item=_item(loaded, row, where),
                answer=_object(row, "answer", where),
                time_spent_ms=_count(row, "time_spent_ms", where),
                annotated_at=_moment(row, "annotated_at", where),
                source=_text(row, "source", where, limit=200),
            )
        )
    ExternalAnnotation.objects.bulk_create(answers, batch_size=2000)


def _settings_versions(loaded: _Loaded, path: Path | None) -> None:
    """The bundle's settings versions replace the one the study file recorded (a bundle written
    before versions were bundled, or of a project never changed, has none: the study file's
    settings are version 1); the project is at the last."""
    rows = list(_rows(path))
    if not rows:
        return
    versions = []
    for where, row in rows:
        versions.append(
            ProjectSettingsVersion(
                project=loaded.project,
                number=_count(row, "number", where, minimum=1, optional=False),
                guidelines=_text(row, "guidelines", where, limit=1_000_000),
                config=_object(row, "config", where),
                crowd=_object(row, "crowd", where),
                via=_text(row, "via", where, limit=40),
            )
        )
    numbers = [v.number for v in versions]
    if len(set(numbers)) != len(numbers):
        raise BundleRefused("settings_versions.jsonl: a version number appears twice.")
    ProjectSettingsVersion.objects.filter(project=loaded.project).delete()
    ProjectSettingsVersion.objects.bulk_create(versions)
    Project.objects.filter(pk=loaded.project.pk).update(settings_version=max(numbers))
    loaded.project.settings_version = max(numbers)


def _answers_made_under_known_versions(loaded: _Loaded) -> None:
    """Every answer's settings version is one the bundle records (found by the probe: a
    ``settings_version`` of 999 loaded)."""
    known = ProjectSettingsVersion.objects.filter(project=loaded.project).values("number")
    stray = (
        Annotation.objects.filter(item__project=loaded.project, settings_version__isnull=False)
        .exclude(settings_version__in=known)
        .values_list("settings_version", flat=True)
        .first()
    )
    if stray is not None:
        raise BundleRefused(
            f"annotations.jsonl: settings_version {stray} is not a version in "
            "settings_versions.jsonl."
        )


def _audit_loaded(loaded: _Loaded, path: Path | None, user) -> None:
    """The loaded project's log starts with its creation and this entry; the source project's
    log (``audit.jsonl``, absent from bundles written before it was bundled) stays in the bundle:
    it is checked to be JSON Lines and counted, not copied (it describes another instance)."""
    source_entries = sum(1 for _ in _rows(path))
    audit_record(
        project=loaded.project,
        actor=user,
        kind=AuditKind.BUNDLE_LOADED,
        summary=f"Loaded from a replication bundle ({len(loaded.items)} items; the source "
        f"project's log has {source_entries} entries, kept in its audit.jsonl).",
        changes={"items": len(loaded.items), "source_audit_entries": source_entries},
    )


def bundle_load(*, directory: Path, user=None) -> Project:
    """Load a bundle written by :func:`studies.bundles.bundle_write` as a new project (see the
    module doc); ``user`` becomes its researcher. ``BundleRefused`` (nothing loaded) when the
    bundle fails a check or would touch anything that exists here."""
    files = _checked_files(directory)
    study, judge_entries = _study(files["study.json"])
    if Project.objects.filter(slug=study.get("slug")).exists():
        raise BundleRefused(f"slug: a project {study.get('slug')!r} exists here already.")
    try:
        with transaction.atomic():
            project = study_apply(data=study, user=user, create_only=True, via="bundle")["project"]
            loaded = _Loaded(project=project)
            versions = _judge_prompt_versions(files.get("judge_results.jsonl"))
            _prompts(loaded, files.get("prompts.jsonl"))
            _judges(loaded, judge_entries, versions)
            _items(loaded, files["items.jsonl"])
            _annotators(loaded, files["annotators.jsonl"])
            _annotations(loaded, files["annotations.jsonl"])
            _judge_results(loaded, files.get("judge_results.jsonl"))
            _external(loaded, files.get("external_annotations.jsonl"))
            _settings_versions(loaded, files.get("settings_versions.jsonl"))
            _answers_made_under_known_versions(loaded)
            _audit_loaded(loaded, files.get("audit.jsonl"), user)
    except IntegrityError as exc:  # a concurrent load of the same bundle, or a row we missed
        raise BundleRefused(f"The bundle conflicts with what is here ({exc}).") from None
    return project
