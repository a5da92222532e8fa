"""Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server),
called through the ``openai`` SDK.

One call never raises: it returns a ``CallOutcome`` that says whether the reply came back, and if
not, whether trying again later can help. The SDK's own retries are switched off
(``max_retries=0``) so the Celery task is the one place that retries, with backoff and jitter.

Error classes:
- transient (retry later): timeout, connection error, 408, 409, 429, 5xx;
- permanent for this item: 400, 413, 422 and other 4xx (e.g. the prompt is too long);
- fatal for the whole run: 401, 403, 404 (bad key, no access, unknown model or wrong URL): every
  other item would fail the same way, so the run stops at once.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass

from llm_judges.backends.errors import ConfigError

TRANSIENT = "transient"
PERMANENT = "permanent"
FATAL = "fatal"

FATAL_STATUSES = {401, 403, 404}
TRANSIENT_STATUSES = {408, 409, 429}


@dataclass(frozen=True)
class CallOutcome:
    text: str | None = None  # the reply's content; None when the call failed
    error_kind: str = ""  # "", TRANSIENT, PERMANENT or FATAL
    error: str = ""
    http_status: int | None = None
    retry_after: float | None = None  # seconds the server asked us to wait (429/503)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: int = 0

    @property
    def ok(self) -> bool:
        return self.text is not None


def _retry_after(response) -> float | None:
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None  # an HTTP date: rare from LLM servers; our own backoff applies


class LLMBackend:
    """One endpoint and model with its sampling settings; safe to share between threads."""

    def __init__(
        self,
        *,
        model: str,
        base_url: str,
        api_key_env: str = "",
        temperature: float = 0.0,
        max_tokens: int = 256,
        timeout: float = 60.0,
        structured_output: bool = True,
    ) -> None:
        import openai

        api_key = "not-needed"  # local servers (vLLM, Ollama) accept anything
        if api_key_env:
            api_key = os.environ.get(api_key_env, "")
            if not api_key:
                raise ConfigError(
                    f"The environment variable {api_key_env} (the judge's API key) is not set "
                    "in the worker's environment."
                )
        self.model = model
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.timeout = timeout
        self.structured_output = structured_output
        self.client = openai.OpenAI(
            base_url=base_url, api_key=api_key, timeout=timeout, max_retries=0
        )

    def call(self, messages: list[dict], response_format: dict | None = None) -> CallOutcome:
        import openai

        options = {}
        if self.structured_output and response_format is not None:
            options["response_format"] = response_format
        started = time.perf_counter()

        def elapsed() -> int:
            return round((time.perf_counter() - started) * 1000)

        try:
            response = self.client.chat.completions.create(
                model=self.model,
                messages=messages,
                temperature=self.temperature,
                max_tokens=self.max_tokens,
                timeout=self.timeout,
                **options,
            )
        except openai.APITimeoutError:
            return CallOutcome(
                error_kind=TRANSIENT,
                error=f"timed out after {self.timeout:g} s",
                latency_ms=elapsed(),
            )
        except openai.APIConnectionError as exc:
            cause = exc.__cause__ or exc
            return CallOutcome(
                error_kind=TRANSIENT, error=f"connection error: {cause}", latency_ms=elapsed()
            )
        except openai.APIStatusError as exc:
            status = exc.status_code
            if status in FATAL_STATUSES:
                kind = FATAL
            elif status in TRANSIENT_STATUSES or status >= 500:
                kind = TRANSIENT
            else:
                kind = PERMANENT
            return CallOutcome(
                error_kind=kind,
                error=f"HTTP {status}: {exc.message}"[:2000],
                http_status=status,
                retry_after=_retry_after(exc.response),
                latency_ms=elapsed(),
            )
        except openai.OpenAIError as exc:  # e.g. a 200 whose body is not a completion
            return CallOutcome(
                error_kind=PERMANENT,
                error=f"{type(exc).__name__}: {exc}"[:2000],
                latency_ms=elapsed(),
            )
        latency = elapsed()
        usage = getattr(response, "usage", None)
        choices = getattr(response, "choices", None) or []
        text = ""
        if choices:
            message = choices[0].message
            text = message.content if message.content is not None else (message.refusal or "")
        return CallOutcome(
            text=text,
            http_status=200,
            prompt_tokens=getattr(usage, "prompt_tokens", None),
            completion_tokens=getattr(usage, "completion_tokens", None),
            latency_ms=latency,
        )
