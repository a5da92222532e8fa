"""Load judge prompt templates from a YAML or JSON file.

    python manage.py load_prompt FILE [--judge NAME]

The file holds one prompt or a list of them (YAML: several documents also work)::

    name: xing-2024-citation          # required; a new version when its content changes
    task_type: citation_recovery      # required; which task type's placeholders it may use
    system: You are an annotator.     # optional
    template: |                       # required; {placeholders} of the task type; {{ }} = braces
      Claim: {claim}
      ...
    variants: {filter: "..."}         # optional, argument structure's item modes
    output_schema: {...}              # optional JSON schema; default: the task type's own
    parameters: {temperature: 0}      # optional: temperature, top_p, max_tokens, seed
    note: Table 7 of the paper        # optional

Nothing is saved unless every prompt of the file is valid: an error names the prompt (its
position and name), the field and, for a placeholder the task type does not provide, the
placeholder. A prompt whose latest version a run used is saved as the next version; one whose
content did not change is left as it is. ``--judge`` points an LLM judge at the (last) prompt
loaded.
"""

from __future__ import annotations

import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from core.wording import indefinite
from core.yaml_safety import UnsafeYAML, yaml_load_all
from llm_judges.models import Judge
from llm_judges.services import JudgeError
from llm_judges.services.prompt_templates import prompt_template_save

KEYS = (
    "name",
    "task_type",
    "template",
    "system",
    "variants",
    "output_schema",
    "parameters",
    "note",
)
REQUIRED = ("name", "task_type", "template")


def read_prompt_file(path: Path) -> list[dict]:
    """The prompts of a YAML or JSON file (CommandError naming the line of a syntax error)."""
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise CommandError(f"{path}: no such file.") from None
    except UnicodeDecodeError as exc:
        raise CommandError(f"{path}: not UTF-8 text (byte {exc.start}).") from None
    if path.suffix.lower() == ".json":
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CommandError(
                f"{path}, line {exc.lineno}, column {exc.colno}: not valid JSON: {exc.msg}."
            ) from None
        documents = [data]
    else:
        try:
            documents = [d for d in yaml_load_all(text) if d is not None]
        except UnsafeYAML as exc:  # "line L[, column C]: …" as for JSON above, or why not
            separator = "," if str(exc).startswith("line ") else ":"
            raise CommandError(f"{path}{separator} {exc}.") from None
    prompts: list = []
    for document in documents:
        prompts.extend(document if isinstance(document, list) else [document])
    if not prompts:
        raise CommandError(f"{path}: the file holds no prompt.")
    return prompts


def _label(index: int, entry: object) -> str:
    name = entry.get("name") if isinstance(entry, dict) else None
    return f"prompt {index}" + (f" ({name})" if isinstance(name, str) and name else "")


def check_entry(index: int, entry: object) -> dict:
    label = _label(index, entry)
    if not isinstance(entry, dict):
        raise CommandError(f"{label}: expected a mapping with {', '.join(REQUIRED)}.")
    unknown = sorted(set(map(str, entry)) - set(KEYS))
    if unknown:
        raise CommandError(f"{label}: unknown field {unknown[0]!r} (fields: {', '.join(KEYS)}).")
    for key in REQUIRED:
        if not isinstance(entry.get(key), str) or not entry[key].strip():
            raise CommandError(f"{label}: {key} is missing (text).")
    for key in ("system", "note"):
        if key in entry and entry[key] is not None and not isinstance(entry[key], str):
            raise CommandError(f"{label}: {key} must be text.")
    for key in ("variants", "parameters"):
        if entry.get(key) is not None and not isinstance(entry[key], dict):
            raise CommandError(f"{label}: {key} must be a mapping.")
    return {
        "name": entry["name"].strip(),
        "task_type": entry["task_type"].strip(),
        "template": entry["template"],
        "system": entry.get("system") or "",
        "variants": entry.get("variants") or {},
        "output_schema": entry.get("output_schema"),
        "parameters": entry.get("parameters") or {},
        "note": entry.get("note") or "",
    }


class Command(BaseCommand):
    help = "Load judge prompt templates from a YAML or JSON file (a new version when changed)."

    def add_arguments(self, parser):
        parser.add_argument("file", help="A .yaml/.yml or .json file.")
        parser.add_argument(
            "--judge", help="Point this LLM judge (of --project) at the (last) prompt loaded."
        )
        parser.add_argument("--project", help="The project (slug) whose judge --judge names.")

    def handle(self, *args, **options):
        path = Path(options["file"])
        entries = [check_entry(i, e) for i, e in enumerate(read_prompt_file(path), 1)]
        judge = None
        if options.get("judge"):
            if not options.get("project"):
                raise CommandError("--judge needs --project: judges belong to a project.")
            judge = Judge.objects.filter(
                project__slug=options["project"], name=options["judge"]
            ).first()
            if judge is None:
                raise CommandError(f"{options['project']} has no judge named {options['judge']!r}.")
            if judge.kind != Judge.Kind.LLM:
                raise CommandError(
                    f"{judge.name} is {indefinite(judge.kind)} judge; prompts are for LLMs."
                )
        saved = []
        with transaction.atomic():
            for index, entry in enumerate(entries, 1):
                try:
                    saved.append(prompt_template_save(**entry))
                except JudgeError as exc:
                    where = f"{exc.field}: " if exc.field and exc.field not in exc.message else ""
                    raise CommandError(f"{_label(index, entry)}: {where}{exc.message}") from None
            if judge is not None:
                judge.prompt = saved[-1][0]
                judge.save()
        for template, what in saved:
            self.stdout.write(
                f"{template.name} v{template.version} ({template.task_type}): {what} · "
                f"fingerprint {template.fingerprint}"
            )
        if judge is not None:
            self.stdout.write(f"{judge.name} now uses {saved[-1][0]}.")
