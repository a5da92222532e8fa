"""``docs/formats.md``, written from the task types' own definitions (``manage.py formats``):
each task type's import formats with the reader's description and the example file that the
project page offers, so the page, the docs and the importer cannot disagree (a test compares
the file with this output)."""

from __future__ import annotations

import inspect

from annotation import task_types
from studies.services.imports import GENERIC_FORMATS

GENERIC = {
    "jsonl": "JSON Lines: one record (a JSON object) per line, the fields of the task type's "
    "payload; fields it does not know are kept as provenance.",
    "csv": "CSV with a header row naming the payload's fields; a field holding a list or an "
    "object is JSON text in its cell.",
}
SHOWN_CHARACTERS = 1500  # longer examples are cut here; the page offers the whole file


def _description(task_type, fmt: str) -> str:
    if fmt in GENERIC_FORMATS:
        return GENERIC[fmt]
    doc = inspect.getdoc(task_type.readers[fmt]) or ""
    return " ".join(doc.split("\n\n")[0].split())


def formats_markdown() -> str:
    lines = [
        "# Import formats",
        "",
        "Written by `manage.py formats` from each task type's own definitions; do not edit by",
        "hand. Every format below has an example file, offered next to the import form on the",
        "project page (`/formats/<task type>/<format>/`), and a test imports each one.",
        "",
        "The import form, the API and `manage.py import_items` detect the format by default:",
        "each format below tries to read a first record from the file's first 4 MiB that the",
        "task type accepts, the task type's own formats first, and the first that can is used",
        "(the import's result says which). A format that is one JSON document is detected only",
        "in a file under 4 MiB. A file that the chosen format cannot read, or that holds no",
        "records, is refused, naming the format it looks like.",
        "",
    ]
    for task_type in task_types.all_task_types():
        lines += [f"## {task_type.name} (`{task_type.slug}`)", "", task_type.description, ""]
        files = task_type.example_files()
        for name, text in files.items():
            fmt = name.split(" ")[0]
            title = f"`{name}`" + (" (the format's mapping file)" if name != fmt else "")
            lines += [f"### {title}", ""]
            if name == fmt:
                lines += [_description(task_type, fmt), ""]
            shown = text if len(text) <= SHOWN_CHARACTERS else text[:SHOWN_CHARACTERS] + "…\n"
            lines += ["```", shown.rstrip("\n"), "```", ""]
    return "\n".join(lines)
