"""Any OpenAI-compatible chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server),
called through the ``openai`` SDK.

One call never raises: it returns a ``CallOutcome`` that says whether the reply came back, and if
not, whether trying again later can help. The SDK's own retries are switched off
(``max_retries=0``) so the Celery task is the one place that retries, with backoff and jitter.

Error classes:
- transient (retry later): timeout, connection error, 408, 409, 429, 5xx;
- permanent for this item: 400, 413, 422 and other 4xx (e.g. the prompt is too long);
- fatal for the whole run: 401, 403, 404 (bad key, no access, unknown model or wrong URL): every
  other item would fail the same way, so the run stops at once. So is any 4xx or 5xx whose message
  says the request as a whole is refused (:func:`refuses_the_request`): a wrong model name
  (transformers serve: 400 "Server is pinned to …"), an unsupported ``response_format``
  (llama-cpp-python: 500), an unknown parameter. Retrying those, or calling for the next item,
  only repeats the refusal.

What an error says, and to whom: a server's error body is untrusted text (a proxy's HTML page,
an admin panel with its secrets). ``CallOutcome.error``, which researchers see on the run page and
in exports, holds only the HTTP status and the error class we name (:data:`ERROR_CLASSES`:
"HTTP 400: structured output refused"), never the body; ``CallOutcome.excerpt`` holds the
server's own message (``{"error": {"message": …}}`` as OpenAI sends it, ``{"detail": …}`` as
FastAPI servers do, or the body's text) as a bounded, sanitised excerpt (:func:`excerpt_of`:
tags removed, secrets redacted, at most ``EXCERPT_CHARS``) for staff only (the admin, the run
page for staff). Connection errors and timeouts are described by the client, not the server, and
are shown as they are ("connection error: [Errno 111] Connection refused").
Replies also carry their ``finish_reason`` ("stop", or "length" when cut at ``max_tokens``).

Structured output (``structured_output``): ``json_schema`` sends OpenAI's
``{"type": "json_schema", "json_schema": {…}}``; ``json_object_schema`` sends llama.cpp's
``{"type": "json_object", "schema": …}``; ``none`` sends no ``response_format``.

Token log-probabilities (``top_logprobs``, default 5; 0 sends none): the call asks for
``logprobs: true, top_logprobs: k``. OpenAI, vLLM and llama.cpp return them; transformers serve
ignores the fields (no logprobs in the reply); a server or model that refuses them (OpenAI's
reasoning models: 400 "logprobs … not supported"; an "unknown parameter" or "extra inputs" 400 or
422) gets the same call again without them, and this backend sends them no more. A reply's
tokens are kept (``CallOutcome.tokens``, at most ``MAX_TOKENS_KEPT``) for
:func:`llm_judges.backends.logprobs.answer_probability`.
"""

from __future__ import annotations

import html
import json
import os
import re
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING

from core.destinations import REFUSED as REFUSED_DESTINATION
from llm_judges.backends.errors import ConfigError

if TYPE_CHECKING:
    from llm_judges.prompts import ChatMessage

TRANSIENT = "transient"
PERMANENT = "permanent"
FATAL = "fatal"

FATAL_STATUSES = {401, 403, 404}
TRANSIENT_STATUSES = {408, 409, 429}

# A server's message that the request itself (not this item's prompt) is invalid.
_REQUEST_REFUSED = re.compile(
    r"response_format|json_schema|json_object|\bschema\b|validation error|unsupported|"
    r"not supported|unknown (?:parameter|field|argument)|unrecognized|extra (?:inputs|fields)|"
    r"unexpected (?:fields|keyword|argument)|invalid (?:parameter|value for|type for)",
    re.IGNORECASE,
)
# A message about the model: "model 'x' not found", "Server is pinned to 'y'"… (not the context
# length: "This model's maximum context length is 4096 tokens" is about this item's prompt).
_MODEL_REFUSED = re.compile(r"\bmodel\b|\bpinned\b", re.IGNORECASE)
_ITEM_SPECIFIC = re.compile(r"context|too long|too many tokens|maximum.*length", re.IGNORECASE)
_FORMAT_REFUSED = re.compile(r"response_format|json_schema|json_object|\bschema\b", re.IGNORECASE)

# The error classes researchers see (stored in ``error_class`` of calls and results), with the
# words shown after the HTTP status. Ours, never the server's.
ERROR_CLASSES = {
    "refused_address": "address refused (not a staff-approved network)",
    "unreachable": "server unreachable",
    "timeout": "timed out",
    "rate_limited": "rate limited",
    "server_error": "server error",
    "auth": "API key refused",
    "forbidden": "access refused",
    "not_found": "not found (model or URL)",
    "model_refused": "the model name is refused",
    "format_refused": "structured output refused",
    "request_refused": "request refused as a whole (a parameter the server does not accept)",
    "prompt_too_long": "the prompt is too long for the model",
    "bad_request": "request refused for this item",
    "bad_reply": "the reply is not a chat completion",
}
EXCERPT_CHARS = 300
MAX_TOKENS_KEPT = 4096  # the reply's tokens kept with their log-probabilities
_LOGPROBS_STATUSES = {400, 422}
_LOGPROBS_REFUSED = re.compile(r"logprob", re.IGNORECASE)
_TAGS = re.compile(r"<[^>]{0,2000}>")
_SECRETS = (
    re.compile(r"(?i)(bearer\s+)[\w.~+/=-]+"),
    # key=value, key: value and "key": "value" where the key names a secret
    re.compile(
        r"""(?i)(["']?[\w.-]*(?:secret|passw(?:or)?d|token|api[_-]?key|access[_-]?key|"""
        r"""private[_-]?key|credential|session|cookie|auth\w*)[\w.-]*["']?\s*[=:]\s*)"""
        r"""("[^"]*"|'[^']*'|[^\s,;&"'<>]+)"""
    ),
    re.compile(r"()\b(?:sk|pk|rk)-[\w-]{8,}"),  # API keys in OpenAI's shape
    re.compile(r"(\w+://[^/\s:@]*:)[^@\s/]+(?=@)"),  # a password in a URL
)


def excerpt_of(text: str, *, limit: int = EXCERPT_CHARS) -> str:
    """A server's error text as staff may read it: markup removed, entities decoded, whitespace
    collapsed, anything that looks like a secret (``secret=…``, ``"api_key": "…"``, ``Bearer …``,
    ``sk-…``, the password in ``scheme://user:password@host``) replaced by ``[redacted]``, cut at ``limit`` characters (``…`` marks a cut)."""
    text = html.unescape(_TAGS.sub(" ", text[: limit * 20]))
    text = " ".join(text.split())
    for pattern in _SECRETS:
        text = pattern.sub(lambda m: f"{m.group(1)}[redacted]", text)
    return text if len(text) <= limit else text[: limit - 1] + "…"


@dataclass(frozen=True)
class CallOutcome:
    text: str | None = None  # the reply's content; None when the call failed
    error_kind: str = ""  # "", TRANSIENT, PERMANENT or FATAL
    error: str = ""  # for researchers: the status and our error class, never the server's body
    error_class: str = ""  # a key of ERROR_CLASSES
    excerpt: str = ""  # for staff: the server's message, bounded and sanitised (excerpt_of)
    http_status: int | None = None
    retry_after: float | None = None  # seconds the server asked us to wait (429/503)
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_ms: int = 0
    finish_reason: str = ""  # "stop", "length" (cut at max_tokens), "content_filter"…
    # The reply's tokens and their log-probabilities, where the server returned them.
    tokens: tuple[tuple[str, float], ...] | None = None

    @property
    def ok(self) -> bool:
        return self.text is not None


def _retry_after(response) -> float | None:
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return max(float(value), 0.0) if value is not None else None
    except ValueError:
        return None  # an HTTP date: rare from LLM servers; our own backoff applies


def server_message(exc) -> str:
    """The server's own reason for an error status, from the SDK's exception: OpenAI's
    ``{"error": {"message": …}}``, FastAPI's ``{"detail": …}`` (a string or a list of validation
    errors), ``{"error": "…"}`` or ``{"message": …}``, else the body's text."""
    body = getattr(exc, "body", None)
    response = getattr(exc, "response", None)
    if body is None and response is not None:
        try:
            body = json.loads(response.text)
        except (ValueError, TypeError, AttributeError):
            body = getattr(response, "text", None)
    message = _message_in(body)
    if not message and response is not None:
        try:
            message = _message_in(json.loads(response.text)) or response.text.strip()
        except (ValueError, TypeError, AttributeError):
            message = ""
    return message or getattr(exc, "message", "") or str(exc)


def _message_in(body) -> str:
    if isinstance(body, str):
        return body.strip()
    if isinstance(body, list):  # FastAPI validation errors: [{"loc": …, "msg": …}, …]
        return "; ".join(
            filter(
                None,
                (
                    _message_in(entry.get("msg") if isinstance(entry, dict) else entry)
                    for entry in body
                ),
            )
        )
    if isinstance(body, dict):
        for key in ("error", "detail", "message", "msg"):
            if key in body:
                found = _message_in(body[key])
                if found:
                    return found
    return ""


def is_about_the_item(message: str) -> bool:
    """Whether an error message is about this item's prompt (its length), not the request."""
    return bool(_ITEM_SPECIFIC.search(message))


def error_class_of(*, status: int, message: str, model: str) -> str:
    """Our name (a key of :data:`ERROR_CLASSES`) for an error status and the server's message."""
    if status == 401:
        return "auth"
    if status == 403:
        return "forbidden"
    if status == 404:
        return "not_found"
    if status == 429:
        return "rate_limited"
    if _FORMAT_REFUSED.search(message):
        return "format_refused"
    if status < 500 and _ITEM_SPECIFIC.search(message):
        return "prompt_too_long"
    if _REQUEST_REFUSED.search(message):
        return "request_refused"
    if status >= 500 or status in TRANSIENT_STATUSES:
        return "server_error"
    if _MODEL_REFUSED.search(message) or (model and model in message):
        return "model_refused"
    return "bad_request"


def refuses_the_request(*, status: int, message: str, model: str) -> bool:
    """Whether an error status says the request as a whole is refused, whatever the item: the
    same call would fail for every item, so the run fails once instead of retrying or failing
    item by item."""
    if status in FATAL_STATUSES:
        return True
    if status < 400:
        return False
    if _REQUEST_REFUSED.search(message):
        return True
    if status >= 500:
        return False
    if _ITEM_SPECIFIC.search(message):
        return False
    return bool(_MODEL_REFUSED.search(message) or (model and model in message))


def response_format_for(mode: str, response_format: dict | None) -> dict | None:
    """The ``response_format`` to send in a structured-output mode, from the prompt's
    ``json_schema`` format."""
    if response_format is None or mode == "none":
        return None
    if mode == "json_object_schema":
        schema = response_format.get("json_schema", {}).get("schema")
        return {"type": "json_object", "schema": schema} if schema else {"type": "json_object"}
    return response_format


def _reply_tokens(choice) -> tuple[tuple[str, float], ...] | None:
    """The reply's (token, log-probability) pairs, where the server returned them; None where it
    returned none or something else (a server's own shape is untrusted)."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not isinstance(content, list) or not content:
        return None
    tokens = []
    for entry in content[:MAX_TOKENS_KEPT]:
        token, logprob = getattr(entry, "token", None), getattr(entry, "logprob", None)
        if not isinstance(token, str) or not isinstance(logprob, int | float):
            return None
        tokens.append((token, float(logprob)))
    return tuple(tokens)


def _reply_outcome(response, *, latency_ms: int) -> CallOutcome:
    """A chat completion as a call's outcome: the reply's text, why it ended, the usage, the
    tokens' log-probabilities."""
    usage = getattr(response, "usage", None)
    choices = getattr(response, "choices", None) or []
    text, finish_reason, tokens = "", "", None
    if choices:
        message = choices[0].message
        text = message.content if message.content is not None else (message.refusal or "")
        finish_reason = str(getattr(choices[0], "finish_reason", None) or "")
        tokens = _reply_tokens(choices[0])
    return CallOutcome(
        text=text,
        finish_reason=finish_reason[:20],
        http_status=200,
        prompt_tokens=getattr(usage, "prompt_tokens", None),
        completion_tokens=getattr(usage, "completion_tokens", None),
        latency_ms=latency_ms,
        tokens=tokens,
    )


def refuses_logprobs(outcome: CallOutcome) -> bool:
    """Whether a call that asked for log-probabilities was refused for asking: a 400 or 422 that
    names them, or that refuses a parameter of the request (the server's message)."""
    if outcome.http_status not in _LOGPROBS_STATUSES:
        return False
    return bool(_LOGPROBS_REFUSED.search(outcome.excerpt)) or outcome.error_class == (
        "request_refused"
    )


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
        structured_output: str = "json_schema",
        seed: int | None = None,
        top_p: float | None = None,
        top_logprobs: int = 0,
        allow_private_network: bool = False,
    ) -> None:
        import openai

        from core.destinations import DestinationRefused, checked_http_client, url_check

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
        self.seed = seed
        self.top_p = top_p  # sent only when set (a prompt template's parameters)
        self.top_logprobs = top_logprobs  # 0: no log-probabilities asked for
        # The server refused them once: not asked for again (a plain bool: threads only set it).
        self.logprobs_refused = False
        # Only where the endpoint may reach (core.destinations): checked now, so a refused host
        # fails the run at once (a ConfigError), and again on every connection the client opens.
        try:
            url_check(base_url, allow_private=allow_private_network)
        except DestinationRefused as exc:
            raise ConfigError(str(exc)) from None
        self.client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=0,
            http_client=checked_http_client(allow_private=allow_private_network, timeout=timeout),
        )

    def call(self, messages: list[ChatMessage], response_format: dict | None = None) -> CallOutcome:
        """One call; asked for log-probabilities and refused for it, the same call without."""
        options: dict = {}
        sent_format = response_format_for(self.structured_output, response_format)
        if sent_format is not None:
            options["response_format"] = sent_format
        if self.seed is not None:
            options["seed"] = self.seed
        if self.top_p is not None:
            options["top_p"] = self.top_p
        if self.top_logprobs and not self.logprobs_refused:
            outcome = self._create(
                messages, {**options, "logprobs": True, "top_logprobs": self.top_logprobs}
            )
            if not refuses_logprobs(outcome):
                return outcome
            self.logprobs_refused = True
        return self._create(messages, options)

    def _create(self, messages: list[ChatMessage], options: dict) -> CallOutcome:
        import openai

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
                error_class="timeout",
                latency_ms=elapsed(),
            )
        except openai.APIConnectionError as exc:
            # The client's own words about the network ("[Errno 111] Connection refused"), not
            # text the server sent.
            cause = excerpt_of(str(exc.__cause__ or exc), limit=200)
            # The host now resolves to an address the endpoint may not reach: every call would.
            refused = REFUSED_DESTINATION in str(exc.__cause__ or exc)
            return CallOutcome(
                error_kind=FATAL if refused else TRANSIENT,
                error=f"connection error: {cause}",
                error_class="refused_address" if refused else "unreachable",
                latency_ms=elapsed(),
            )
        except openai.APIStatusError as exc:
            status = exc.status_code
            message = server_message(exc)
            if refuses_the_request(status=status, message=message, model=self.model):
                kind = FATAL
            elif status in TRANSIENT_STATUSES or status >= 500:
                kind = TRANSIENT
            else:
                kind = PERMANENT
            error_class = error_class_of(status=status, message=message, model=self.model)
            return CallOutcome(
                error_kind=kind,
                error=f"HTTP {status}: {ERROR_CLASSES[error_class]}",
                error_class=error_class,
                excerpt=excerpt_of(message),
                http_status=status,
                retry_after=_retry_after(exc.response),
                latency_ms=elapsed(),
            )
        except openai.OpenAIError as exc:  # e.g. a 200 whose body is not a completion
            return CallOutcome(
                error_kind=PERMANENT,
                error=f"{ERROR_CLASSES['bad_reply']} ({type(exc).__name__})",
                error_class="bad_reply",
                excerpt=excerpt_of(str(exc)),
                latency_ms=elapsed(),
            )
        return _reply_outcome(response, latency_ms=elapsed())
