"""Judge parameters per kind: one serializer each validates the admin form and the services.

Security: where an LLM judge's calls go is not a parameter. The base URL and the environment
variable holding its key belong to a staff-approved ``ModelEndpoint`` (:func:`clean_endpoint`
checks them: only names ending in ``_API_KEY``, so not even staff can make a worker send another
secret such as ``DJANGO_SECRET_KEY``); a judge's parameters are its sampling settings only, and
``base_url`` or ``api_key_env`` among them is refused with a pointer to the endpoints.
"""

from __future__ import annotations

import re
import socket
from urllib.parse import urlparse

from rest_framework import serializers

from core.destinations import address_refusal
from core.wording import indefinite

API_KEY_ENV = re.compile(r"^[A-Z][A-Z0-9_]*_API_KEY$")
EMBEDDING_MODELS = ("all-MiniLM-L6-v2",)


STRUCTURED_OUTPUT_MODES = ("json_schema", "json_object_schema", "none")


class StructuredOutputField(serializers.ChoiceField):
    """A structured-output mode; the former yes/no setting is read as json_schema / none."""

    def to_internal_value(self, data):
        if isinstance(data, bool):
            data = "json_schema" if data else "none"
        return super().to_internal_value(data)


class _Common(serializers.Serializer):
    items_per_task = serializers.IntegerField(
        min_value=1, max_value=2000, default=50, help_text="Items per Celery task (one batch)."
    )


ENDPOINT_KEYS = ("base_url", "api_key_env")
ENDPOINT_MESSAGE = (
    "Not a judge parameter: a judge calls the model endpoint staff set up for the project "
    "(choose it as the judge's endpoint)."
)


def clean_endpoint(
    *, base_url: str, api_key_env: str, allow_private: bool = True
) -> tuple[str, str]:
    """A model endpoint's URL and key variable, checked; ``ValueError(field, message)``. The
    URL carries no user name or password (the key is read from ``api_key_env``'s variable);
    unless ``allow_private``, a host written as a loopback, private or link-local address (or
    ``localhost``) is refused now, at save, rather than at the first run (a host name is
    checked when it is called, ``core.destinations``)."""
    parsed = urlparse(base_url or "")
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ValueError("base_url", "Must be an http(s) URL such as http://host:8000/v1.")
    if parsed.username is not None or parsed.password is not None:
        raise ValueError(
            "base_url",
            "Must not carry a user name or password: the key is read from the variable named "
            "in api_key_env.",
        )
    try:
        parsed.port  # noqa: B018 - raises on a port that is not a number
    except ValueError:
        raise ValueError("base_url", "The port must be a number from 0 to 65535.") from None
    why = "" if allow_private else _private_host(parsed.hostname or "")
    if why:
        raise ValueError(
            "base_url",
            f"{parsed.hostname} is {why}; tick 'allow private network' to call a server there.",
        )
    if api_key_env and not API_KEY_ENV.match(api_key_env):
        raise ValueError(
            "api_key_env",
            "Must be the name of an environment variable ending in _API_KEY (e.g. OPENAI_API_KEY).",
        )
    return base_url.rstrip("/"), api_key_env


def _private_host(host: str) -> str:
    """Why ``host``, written as an address or ``localhost``, is not public ("" otherwise)."""
    if host.lower().rstrip(".") == "localhost" or host.lower().endswith(".localhost"):
        return "this machine (localhost)"
    try:
        return address_refusal(host)
    except ValueError:
        pass
    try:  # the IPv4 shorthands the resolver takes: 127.1, 2130706433, 0x7f000001
        return address_refusal(socket.inet_ntoa(socket.inet_aton(host)))
    except OSError:  # a host name: checked on every call, where it resolves then
        return ""


class LLMParameters(_Common):
    temperature = serializers.FloatField(min_value=0.0, max_value=2.0, default=0.0)
    max_tokens = serializers.IntegerField(min_value=1, max_value=32768, default=256)
    timeout = serializers.FloatField(
        min_value=0.1, max_value=600.0, default=60.0, help_text="Seconds per call."
    )
    concurrency = serializers.IntegerField(
        min_value=1, max_value=64, default=8, help_text="Calls in flight per worker process."
    )
    max_attempts = serializers.IntegerField(
        min_value=1, max_value=10, default=4, help_text="Attempts per item on transient errors."
    )
    backoff_base = serializers.FloatField(min_value=0.0, max_value=300.0, default=2.0)
    backoff_cap = serializers.FloatField(min_value=0.0, max_value=3600.0, default=120.0)
    unreachable_wait = serializers.FloatField(
        min_value=0.0,
        max_value=3600.0,
        default=300.0,
        help_text="Seconds items are retried (with the backoff, beyond max_attempts) while the "
        "server is unreachable (connection refused or reset), so that a server restart is "
        "survived; then they fail with the connection error.",
    )
    tokenizer = serializers.CharField(
        default="",
        allow_blank=True,
        max_length=500,
        help_text="Path of the model's Hugging Face tokenizer on the workers (optional): token "
        "budgets then reserve the prompt's exact count instead of a bound of one token per byte.",
    )
    structured_output = StructuredOutputField(
        choices=STRUCTURED_OUTPUT_MODES,
        default="json_schema",
        help_text="How to ask for the answer's JSON schema: json_schema (OpenAI, vLLM: "
        'response_format {"type": "json_schema", …}), json_object_schema (llama.cpp: '
        '{"type": "json_object", "schema": …}) or none (no response_format). The run reports how '
        "many replies matched the schema, i.e. whether the server honoured it.",
    )
    seed = serializers.IntegerField(
        required=False,
        allow_null=True,
        default=None,
        min_value=-(2**63),
        max_value=2**63 - 1,
        help_text="Sampling seed sent to the server (OpenAI-compatible servers take it); recorded "
        "with the run and each result. Blank: none sent.",
    )

    top_logprobs = serializers.IntegerField(
        min_value=0,
        max_value=20,
        default=5,
        help_text="Token log-probabilities asked for (logprobs: true, top_logprobs: this many "
        "alternatives per token); 0 asks for none. Where the server returns them, each result "
        "records the probability of its answer, which active sampling uses as the judge's "
        "uncertainty. A server that refuses them gets the call again without them.",
    )


NLI_LABELS = ("entailment", "neutral", "contradiction")
NLI_DIRECTIONS = ("forward", "reverse", "both")
NLI_TEMPLATE_FIELDS = ("premise", "hypothesis")


class NLIParameters(_Common):
    """A sequence classifier (labels from ``id2label``) or a seq2seq model whose generated text
    ``label_mapping`` turns into an NLI label (a T5 answering "1"/"0", T5-MNLI answering
    "entailment"/"neutral"/"contradiction"). See :mod:`llm_judges.backends.nli`."""

    items_per_task = serializers.IntegerField(min_value=1, max_value=2000, default=100)
    batch_size = serializers.IntegerField(
        min_value=1, max_value=1024, default=16, help_text="Pairs per forward pass."
    )
    max_length = serializers.IntegerField(min_value=8, max_value=8192, default=512)
    entailment_label = serializers.CharField(
        default="entailment", help_text="The model's id2label name for entailment (classifiers)."
    )
    model_type = serializers.ChoiceField(
        choices=("auto", "classifier", "seq2seq"),
        default="auto",
        help_text="auto: a seq2seq model when the model's config is an encoder-decoder without a "
        "…ForSequenceClassification architecture (T5), a classifier otherwise (BART-MNLI too).",
    )
    direction = serializers.ChoiceField(
        choices=NLI_DIRECTIONS,
        default="forward",
        help_text="forward: the task type's premise → hypothesis (response → claim, evidence → "
        "claim); reverse: hypothesis → premise; both: each pair judged both ways, recorded in the "
        "result's detail: entailment when both entail, contradiction when either contradicts, "
        "neutral otherwise.",
    )
    label_mapping = serializers.DictField(
        child=serializers.CharField(),
        default=dict,
        help_text='Seq2seq: generated text → NLI label, e.g. {"1": "entailment", "0": "neutral"}; '
        "compared after trimming whitespace, ignoring case. Other text is unparseable.",
    )
    input_template = serializers.CharField(
        default="mnli hypothesis: {hypothesis} premise: {premise}",
        help_text="Seq2seq: the model's input, with {premise} and {hypothesis}.",
    )
    max_new_tokens = serializers.IntegerField(
        min_value=1, max_value=64, default=5, help_text="Seq2seq: tokens generated (greedy)."
    )

    def validate_label_mapping(self, value: dict) -> dict:
        mapping: dict[str, str] = {}
        for text, label in value.items():
            key = str(text).strip().lower()
            if not key:
                raise serializers.ValidationError("A generated text must not be blank.")
            if str(label).strip().lower() not in NLI_LABELS:
                raise serializers.ValidationError(
                    f"{text!r} maps to {label!r}; labels are {', '.join(NLI_LABELS)}."
                )
            if key in mapping:
                raise serializers.ValidationError(
                    f"{text!r} is given twice (texts are compared ignoring case and spaces)."
                )
            mapping[key] = str(label).strip().lower()
        if mapping and "entailment" not in mapping.values():
            raise serializers.ValidationError(
                "No text maps to entailment, so the judge could never find one."
            )
        return mapping

    def validate_input_template(self, value: str) -> str:
        import string

        try:
            fields = [name for _, name, _, _ in string.Formatter().parse(value) if name is not None]
        except ValueError as exc:
            raise serializers.ValidationError(f"Not a valid template: {exc}.") from None
        unknown = sorted({name for name in fields if name not in NLI_TEMPLATE_FIELDS})
        if unknown:
            raise serializers.ValidationError(
                f"Unknown placeholder {{{unknown[0]}}}; use {{premise}} and {{hypothesis}}."
            )
        missing = [name for name in NLI_TEMPLATE_FIELDS if name not in fields]
        if missing:
            raise serializers.ValidationError(f"The placeholder {{{missing[0]}}} is missing.")
        try:
            value.format(premise="", hypothesis="")
        except (ValueError, KeyError, IndexError, AttributeError) as exc:
            raise serializers.ValidationError(f"Not a valid template: {exc}.") from None
        return value

    def validate(self, attrs: dict) -> dict:
        if attrs.get("model_type") == "seq2seq" and not attrs.get("label_mapping"):
            raise serializers.ValidationError(
                {
                    "label_mapping": 'A seq2seq judge needs a label mapping, e.g. {"entailment": '
                    '"entailment", "neutral": "neutral", "contradiction": "contradiction"}.'
                }
            )
        if attrs.get("model_type") == "classifier" and attrs.get("label_mapping"):
            raise serializers.ValidationError(
                {
                    "label_mapping": "Only seq2seq models have a label mapping; a classifier's "
                    "labels come from its id2label (see entailment_label)."
                }
            )
        return attrs


class EmbeddingParameters(_Common):
    items_per_task = serializers.IntegerField(min_value=1, max_value=2000, default=200)
    # 0.6: the best of 0.3–0.7 on the 120 claims of the Transparent-FCExp human evaluation
    # (GPT-4 explanations, sample setting): mean F1 0.64 against gold (0.61 at 0.5).
    threshold = serializers.FloatField(
        min_value=-1.0, max_value=1.0, default=0.6, help_text="Cosine similarity to select."
    )
    batch_size = serializers.IntegerField(min_value=1, max_value=1024, default=64)


SERIALIZERS = {"llm": LLMParameters, "nli": NLIParameters, "embedding": EmbeddingParameters}

# The parameters that decide a judge's answers (not how fast it gets them): what a run records as
# its judge's settings, fingerprinted. Embedding and NLI judges use no prompt: these settings
# are their provenance; an LLM judge's prompt template has its own fingerprint besides.
ANSWER_SETTINGS = {
    "embedding": ("threshold",),
    "nli": (
        "entailment_label",
        "model_type",
        "direction",
        "label_mapping",
        "input_template",
        "max_new_tokens",
        "max_length",
    ),
    "llm": ("temperature", "top_p", "max_tokens", "seed", "structured_output"),
}


def judge_settings(*, kind: str, model: str, parameters: dict) -> dict:
    """The settings that decide a judge's answers: its kind, model and the kind's
    :data:`ANSWER_SETTINGS` present in ``parameters`` (cleaned, defaults filled)."""
    return {
        "kind": kind,
        "model": model,
        **{name: parameters[name] for name in ANSWER_SETTINGS.get(kind, ()) if name in parameters},
    }


def settings_fingerprint(settings: dict) -> str:
    """sha256 of the settings as canonical JSON (sorted keys, no spaces)."""
    import hashlib
    import json

    text = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def clean_parameters(kind: str, data: dict | None) -> dict:
    """Validated parameters with defaults filled; raises ``serializers.ValidationError``."""
    if kind not in SERIALIZERS:
        raise serializers.ValidationError({"kind": f"Unknown judge kind {kind!r}."})
    if data is not None and not isinstance(data, dict):
        raise serializers.ValidationError({"parameters": "Must be a JSON object."})
    for key in ENDPOINT_KEYS:
        if key in (data or {}):
            raise serializers.ValidationError({key: ENDPOINT_MESSAGE})
    serializer = SERIALIZERS[kind](data=data or {})
    serializer.is_valid(raise_exception=True)
    unknown = sorted(set(data or {}) - set(serializer.fields))
    if unknown:
        known = ", ".join(serializer.fields)
        raise serializers.ValidationError(
            {unknown[0]: f"Unknown parameter for {indefinite(kind)} judge (known: {known})."}
        )
    return dict(serializer.validated_data)


def clean_model(kind: str, model: str) -> str:
    model = (model or "").strip()
    if not model:
        raise serializers.ValidationError({"model": "Required."})
    if kind == "embedding" and model not in EMBEDDING_MODELS:
        raise serializers.ValidationError(
            {"model": f"Embedding judges use the bundled {EMBEDDING_MODELS[0]} model."}
        )
    return model
