"""The contract between the judge machinery and one task type's prompts and parsers.

A task type gets judges with its package's ``judging.py``, which registers a ``JudgePrompt``.
The services never branch on the task type: they render a wording with the prompt's
``fields(item)`` and ``variant(item)`` (``JudgePrompt.messages``, written once here), and ask
the task type for a JSON schema, for (premise, hypothesis) pairs (NLI and embedding judges), and
to turn what came back into an answer in the task type's answer shape. An item judged in another
presentation (ranking: "reversed") is the same item with the presentation passed alongside
(``item_fields``, ``item_response_format``, ``parse_reply``): nothing is set on the item.

Versioning: every wording or pairing rule lives under a version key ("v1", "v2"…). A version's
text never changes once results exist for it: a judge result is unique per (item, judge, prompt
version, setting), so an edited prompt must get a new version key. ``fingerprint()`` is stored on
each run so an accidental edit is visible.
"""

from __future__ import annotations

import functools
import hashlib
import json
import re
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypedDict

KINDS = ("llm", "nli", "embedding")


class Unparseable(ValueError):
    """A judge reply that cannot be turned into an answer; the message says why."""


@dataclass(frozen=True)
class PromptVersion:
    """One frozen wording: a system message and a user template (``str.format`` fields)."""

    system: str
    user: str
    note: str = ""
    # Further user templates of the same version, for task types whose items come in modes
    # (argument structure: edit / filter / compare); part of the fingerprint.
    variants: Mapping[str, str] = field(default_factory=dict)


class PlaceholderError(ValueError):
    """A prompt template that cannot be rendered: an unknown or malformed placeholder, or a
    stray brace; the message names it."""

    def __init__(self, message: str, *, placeholder: str = ""):
        super().__init__(message)
        self.placeholder = placeholder


_FORMATTER = string.Formatter()


def placeholders_in(text: str) -> list[str]:
    """The named ``{placeholders}`` of a template, in order of first use. Only bare names are
    placeholders: ``{0}``, ``{}``, ``{claim.attr}``, ``{claim!r}`` and ``{claim:>10}`` are
    refused (PlaceholderError), so rendering can never reach an attribute of a field. Literal
    braces are written ``{{`` and ``}}``."""
    names: list[str] = []
    try:
        parsed = list(_FORMATTER.parse(text))
    except ValueError as exc:
        raise PlaceholderError(
            f"The template has a stray brace ({exc}); write {{{{ and }}}} for literal braces."
        ) from None
    for _literal, name, spec, conversion in parsed:
        if name is None:
            continue
        if not name.isidentifier():
            raise PlaceholderError(
                f"{{{name}}} is not a named placeholder (letters, digits and _ only); write "
                "{{ and }} for literal braces.",
                placeholder=name,
            )
        if spec or conversion:
            raise PlaceholderError(
                f"The placeholder {{{name}}} has a conversion or format spec; use {{{name}}} "
                "alone.",
                placeholder=name,
            )
        if name not in names:
            names.append(name)
    return names


def unknown_placeholders(text: str, known: Sequence[str] | Mapping[str, Any]) -> list[str]:
    """The placeholders of ``text`` that are not in ``known`` (PlaceholderError if malformed)."""
    return [name for name in placeholders_in(text) if name not in known]


def render(text: str, fields: Mapping[str, Any]) -> str:
    """``text`` with every ``{placeholder}`` replaced by ``str(fields[name])`` (and ``{{``/``}}``
    by single braces); nothing else is evaluated. A placeholder missing from ``fields`` is a
    PlaceholderError naming it."""
    placeholders_in(text)  # refuses anything but bare names
    out = []
    for literal, name, _spec, _conversion in _FORMATTER.parse(text):
        out.append(literal)
        if name is not None:
            if name not in fields:
                raise PlaceholderError(
                    f"The item provides no value for {{{name}}}.", placeholder=name
                )
            out.append(str(fields[name]))
    return "".join(out)


class ChatMessage(TypedDict):
    """One message of a chat-completions request."""

    role: str  # "system" or "user"
    content: str


def render_messages(*, system: str, user: str, fields: Mapping[str, Any]) -> list[ChatMessage]:
    """Chat messages from a system and a user template (no system message when it is blank)."""
    messages = (
        [ChatMessage(role="system", content=render(system, fields))] if system.strip() else []
    )
    return [*messages, ChatMessage(role="user", content=render(user, fields))]


def fingerprint_of(
    *,
    system: str,
    template: str,
    variants: Mapping[str, str],
    output_schema: Any,
    parameters: Mapping[str, Any],
) -> str:
    """The full sha256 (hex) of a prompt's wording (system, template, variants), its output
    schema and its parameters: two prompts that send the same requests have the same one."""
    text = json.dumps(
        {
            "system": system,
            "template": template,
            "variants": dict(sorted(variants.items())),
            "output_schema": output_schema,
            "parameters": dict(sorted(parameters.items())),
        },
        ensure_ascii=False,
        sort_keys=True,
    )
    return hashlib.sha256(text.encode()).hexdigest()


@dataclass(frozen=True)
class JudgePrompt:
    task_type: str
    versions: Mapping[str, PromptVersion]
    default_version: str
    # llm: (item, version) -> response_format (JSON schema)
    response_format: Callable[[Any, str], dict]
    # llm: (reply text, item) -> answer; raises Unparseable
    parse: Callable[[str, Any], dict]
    # llm, prompts as data: the placeholders a template may use (name -> what it holds), and
    # (item) -> their values for one item. Every name is provided for every item; the built-in
    # versions' wordings use only these (``register`` refuses any other, and an empty set).
    placeholders: Mapping[str, str]
    fields: Callable[[Any], dict]
    # nli / embedding: (item, version) -> [(premise, hypothesis)…]
    pairs: Callable[[Any, str], list[tuple[str, str]]] | None = None
    # nli: (item, labels, probabilities) -> answer; labels are lower-case id2label names
    from_nli: Callable[[Any, Sequence[str], Sequence[Mapping[str, float]]], dict] | None = None
    # embedding: (item, cosine similarities, threshold) -> answer
    from_similarity: Callable[[Any, Sequence[float], float], dict] | None = None
    # (project config) -> the setting a result belongs to ("sample" / "full" for citation recovery)
    setting: Callable[[Mapping[str, Any]], str] = field(default=lambda config: "")
    # answer fields a judge fills (a subset of the task type's answer), for pre-selection
    answer_fields: tuple[str, ...] = ()
    # (item) -> the variant of the template an item uses ("" = the main template)
    variant: Callable[[Any], str] = field(default=lambda item: "")
    # presentations an item can be judged in besides the usual one (ranking: "reversed", the
    # outputs in reverse order, to measure position bias). A task type that declares any takes
    # the keyword ``presentation`` in ``fields``, ``response_format`` and ``parse`` (``register``
    # checks); the services call them through ``item_fields``, ``item_response_format`` and
    # ``parse_reply``, which pass it on only for a presentation other than the usual one ("").
    presentations: tuple[str, ...] = ()

    def _in_presentation(
        self, function: Callable[..., dict], presentation: str
    ) -> Callable[..., dict]:
        """``function`` of this task type told ``presentation`` (as is for the usual one, "");
        a presentation the task type does not declare is a LookupError."""
        if not presentation:
            return function
        if presentation not in self.presentations:
            known = ", ".join(self.presentations) or "none"
            raise LookupError(
                f"The {self.task_type} judge prompt has no presentation {presentation!r} "
                f"(known: {known})."
            )
        return functools.partial(function, presentation=presentation)

    def item_fields(self, item: Any, *, presentation: str = "") -> dict:
        """The placeholders' values for ``item`` shown in ``presentation``."""
        return self._in_presentation(self.fields, presentation)(item)

    def item_response_format(self, item: Any, version: str, *, presentation: str = "") -> dict:
        """The task type's structured output for ``item`` shown in ``presentation``."""
        return self._in_presentation(self.response_format, presentation)(item, version)

    def parse_reply(self, text: str, item: Any, *, presentation: str = "") -> dict:
        """The answer in a reply about ``item`` shown in ``presentation``; raises Unparseable."""
        return self._in_presentation(self.parse, presentation)(text, item)

    def messages_for(
        self,
        item: Any,
        *,
        system: str,
        user: str,
        variants: Mapping[str, str],
        presentation: str = "",
    ) -> list[ChatMessage]:
        """The chat messages of one wording (a built-in version's or a template record's) for
        ``item`` in ``presentation``: the variant the item uses (the main template when it has
        none or the wording leaves it blank), filled with ``item_fields``."""
        name = self.variant(item)
        template = (variants.get(name) if name else None) or user
        return render_messages(
            system=system,
            user=template,
            fields=self.item_fields(item, presentation=presentation),
        )

    def messages(self, item: Any, version: str, *, presentation: str = "") -> list[ChatMessage]:
        """The chat messages of the built-in ``version`` for ``item`` in ``presentation``."""
        wording = self.version(version)
        return self.messages_for(
            item,
            system=wording.system,
            user=wording.user,
            variants=wording.variants,
            presentation=presentation,
        )

    @property
    def kinds(self) -> tuple[str, ...]:
        """Judge kinds this task type supports: LLM always; NLI and embedding when it defines how
        to pair texts and read the scores."""
        kinds = ["llm"]
        if self.pairs is not None and self.from_nli is not None:
            kinds.append("nli")
        if self.pairs is not None and self.from_similarity is not None:
            kinds.append("embedding")
        return tuple(kinds)

    def version(self, key: str) -> PromptVersion:
        try:
            return self.versions[key]
        except KeyError:
            known = ", ".join(sorted(self.versions))
            raise LookupError(
                f"The {self.task_type} judge prompt has no version {key!r} (known: {known})."
            ) from None

    def fingerprint(self, key: str) -> str:
        """The full sha256 of a built-in version's wording (as its shipped template record has
        it: no output schema of its own, no parameters), stored on runs."""
        v = self.version(key)
        return fingerprint_of(
            system=v.system, template=v.user, variants=v.variants, output_schema=None, parameters={}
        )


def json_schema_format(name: str, schema: dict) -> dict:
    """The chat-completions ``response_format`` asking for output that matches ``schema``."""
    return {"type": "json_schema", "json_schema": {"name": name, "strict": True, "schema": schema}}


# A reply that is one fenced block and nothing else: ```json … ``` (the language tag optional).
_FENCED = re.compile(r"```(?:json|JSON)?[ \t]*\n?(.*?)\n?[ \t]*```", re.DOTALL)


def reply_body(text: str) -> str:
    """The reply without surrounding whitespace and, when the whole reply is one fenced block
    (```json … ```), without the fence. Nothing else is removed: an answer embedded in prose is
    not an answer."""
    stripped = text.strip()
    fenced = _FENCED.fullmatch(stripped)
    return fenced.group(1).strip() if fenced else stripped


def extract_json(text: str) -> Any:
    """The JSON value that is the whole reply (surrounding whitespace and one enclosing ```json
    fence allowed). Strict on purpose: a value picked out of prose ("random words [] more
    words") would store garbage as an answer. Raises Unparseable."""
    try:
        return json.loads(reply_body(text))
    except (json.JSONDecodeError, ValueError):
        raise Unparseable(
            "the reply is not a JSON value alone (nothing but JSON, or one ```json block)"
        ) from None


def matches_schema(text: str, response_format: Mapping[str, Any] | None) -> bool | None:
    """Whether the reply is exactly a JSON value (whitespace aside: no fence, no prose) that
    validates against the schema of ``response_format`` (a :func:`json_schema_format`); None
    when there is no schema. What a server that honours structured output returns."""
    schema = (response_format or {}).get("json_schema", {}).get("schema")
    if not schema:
        return None
    import jsonschema

    try:
        value = json.loads(text.strip())
    except (json.JSONDecodeError, ValueError):
        return False
    try:
        return jsonschema.Draft202012Validator(schema).is_valid(value)
    except jsonschema.exceptions.SchemaError:
        return None


def validated_answer(task_type: str, data: dict, item: Any) -> dict:
    """``data`` checked by the task type's own answer serializer (the rules annotators' answers
    follow); raises Unparseable with the first problem."""
    from annotation import task_types
    from core.errors import first_error

    serializer = task_types.get(task_type).answer_serializer(data=data, context={"item": item})
    if not serializer.is_valid():
        where, message = first_error(serializer.errors)
        raise Unparseable(f"{where}: {message}" if where else message)
    return dict(serializer.validated_data)


def read_bool(value: Any, name: str) -> bool:
    """A yes/no field as servers send it: true/false, or the strings true/false/yes/no."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "yes", "false", "no"):
        return value.strip().lower() in ("true", "yes")
    raise Unparseable(f"{name!r} is not true or false")


def object_reply(text: str) -> dict:
    value = extract_json(text)
    if not isinstance(value, dict):
        raise Unparseable("the reply is not a JSON object")
    return value
