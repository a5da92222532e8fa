"""Judge parameters per kind: one serializer each validates the admin form and the services.

Security: the API key is never stored; a judge names the environment variable that holds it, and
only names ending in ``_API_KEY`` are accepted, so a judge configuration cannot make a worker send
another secret (``DJANGO_SECRET_KEY``, ``DATABASE_URL``…) to an endpoint it names.
"""

from __future__ import annotations

import re
from urllib.parse import urlparse

from rest_framework import serializers

API_KEY_ENV = re.compile(r"^[A-Z][A-Z0-9_]*_API_KEY$")
EMBEDDING_MODELS = ("all-MiniLM-L6-v2",)


class _Common(serializers.Serializer):
    items_per_task = serializers.IntegerField(
        min_value=1, max_value=2000, default=50, help_text="Items per Celery task (one batch)."
    )


class LLMParameters(_Common):
    base_url = serializers.CharField(
        help_text="OpenAI-compatible API root, e.g. https://api.openai.com/v1 or http://vllm:8000/v1"
    )
    api_key_env = serializers.CharField(
        default="OPENAI_API_KEY",
        allow_blank=True,
        help_text="Environment variable holding the key (…_API_KEY); blank for servers without keys.",
    )
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
    structured_output = serializers.BooleanField(
        default=True, help_text="Request a JSON schema through response_format."
    )

    def validate_base_url(self, value: str) -> str:
        parsed = urlparse(value)
        if parsed.scheme not in ("http", "https") or not parsed.netloc:
            raise serializers.ValidationError("Must be an http(s) URL such as http://host:8000/v1.")
        return value.rstrip("/")

    def validate_api_key_env(self, value: str) -> str:
        if value and not API_KEY_ENV.match(value):
            raise serializers.ValidationError(
                "Must be the name of an environment variable ending in _API_KEY (e.g. OPENAI_API_KEY)."
            )
        return value


class NLIParameters(_Common):
    items_per_task = serializers.IntegerField(min_value=1, max_value=2000, default=100)
    batch_size = serializers.IntegerField(
        min_value=1, max_value=1024, default=16, help_text="Pairs per forward pass."
    )
    max_length = serializers.IntegerField(min_value=8, max_value=8192, default=512)
    entailment_label = serializers.CharField(
        default="entailment", help_text="The model's id2label name for entailment."
    )


class EmbeddingParameters(_Common):
    items_per_task = serializers.IntegerField(min_value=1, max_value=2000, default=200)
    # 0.6: the best of 0.3–0.7 on the 120 claims of the Transparent-FCExp human evaluation
    # (GPT-4 explanations, sample setting): mean F1 0.64 against gold (0.61 at 0.5).
    threshold = serializers.FloatField(
        min_value=-1.0, max_value=1.0, default=0.6, help_text="Cosine similarity to select."
    )
    batch_size = serializers.IntegerField(min_value=1, max_value=1024, default=64)


SERIALIZERS = {"llm": LLMParameters, "nli": NLIParameters, "embedding": EmbeddingParameters}


def clean_parameters(kind: str, data: dict | None) -> dict:
    """Validated parameters with defaults filled; raises ``serializers.ValidationError``."""
    if kind not in SERIALIZERS:
        raise serializers.ValidationError({"kind": f"Unknown judge kind {kind!r}."})
    if data is not None and not isinstance(data, dict):
        raise serializers.ValidationError({"parameters": "Must be a JSON object."})
    serializer = SERIALIZERS[kind](data=data or {})
    serializer.is_valid(raise_exception=True)
    unknown = sorted(set(data or {}) - set(serializer.fields))
    if unknown:
        known = ", ".join(serializer.fields)
        raise serializers.ValidationError(
            {unknown[0]: f"Unknown parameter for a {kind} judge (known: {known})."}
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
