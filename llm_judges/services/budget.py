"""A run's budget of calls and tokens, enforced across its batches and workers by the database.

Before each LLM call a batch reserves it (``reserve_call``): one call and the most tokens the
call can use, in one conditional UPDATE, so concurrent batches can never reserve past the limit.
After the call the reservation is replaced by the tokens the server counted (``settle_call``);
a call that failed without using the server (connection refused, an error status) releases its
tokens; a call that timed out keeps them (the server may have done the work). A call that cannot
be reserved while other calls of its batch are in flight waits for them to settle; once none is,
it is never made: its item, and every item the batch has not called yet, is stored as "not run:
budget" — unless the batch is a retry (its items were sent back by an error: their own call's, or
the server unreachable while they waited): then they fail with that error, as without a budget.
Every call is counted before it is made, with or without a budget (without one, the
calls a batch starts at once in one UPDATE: ``count_calls``), so ``calls_reserved`` counts the
calls started, those in flight when a worker was killed too.

The most a call can use is ``max_tokens`` plus a bound on its prompt (:class:`PromptMeter`):
the prompt measured by the model's tokenizer when the judge names one (parameter ``tokenizer``, a
local Hugging Face tokenizer directory: its chat template applied, plus ``TOKENIZER_MARGIN``),
else one token per UTF-8 byte (no byte-level BPE or byte-fallback tokenizer makes more) plus
``BOUND_TOKENS_PER_MESSAGE`` per message and ``BOUND_TEMPLATE_TOKENS`` for the chat template.
The bound without a tokenizer is about four times the usual count, so near the limit a run may
leave a few items "not run" that would have fitted; "at most" holds unless the server's chat
template adds more than the bound allows (configure the tokenizer then).

``estimate_tokens`` (about four characters per token plus a few per message, the rule of thumb
for English with GPT-style tokenizers) is what the cost estimate calls "about"; it is never used
to enforce a budget.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from math import ceil

from django.db import connection, transaction
from django.db.models import F, Q

from llm_judges.models import JudgeRun
from llm_judges.prompts import ChatMessage

log = logging.getLogger(__name__)

CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4  # role and separators of the chat format
BOUND_TOKENS_PER_MESSAGE = 16  # role, separators, a tokenizer's prefix: a bound, not a count
BOUND_TEMPLATE_TOKENS = 64  # a chat template's own text (Llama 3.1's date header: ~30)
TOKENIZER_MARGIN = 8  # a server may add a BOS the template lacks, or differ in a detail
NOT_RUN_MESSAGE = "not run: budget"


def estimate_tokens(*, messages: Sequence[ChatMessage]) -> int:
    """About how many prompt tokens ``messages`` take (see the module's docstring)."""
    return sum(
        TOKENS_PER_MESSAGE + ceil(len(str(m.get("content", ""))) / CHARS_PER_TOKEN)
        for m in messages
    )


def bound_tokens(*, messages: Sequence[ChatMessage]) -> int:
    """The most prompt tokens ``messages`` can take under any byte-level tokenizer."""
    return BOUND_TEMPLATE_TOKENS + sum(
        BOUND_TOKENS_PER_MESSAGE + len(str(m.get("content", "")).encode("utf-8", "replace"))
        for m in messages
    )


_tokenizers: dict[str, object] = {}
_tokenizers_lock = threading.Lock()


def _tokenizer(path: str):
    with _tokenizers_lock:
        if path not in _tokenizers:
            from transformers import AutoTokenizer

            _tokenizers[path] = AutoTokenizer.from_pretrained(path, local_files_only=True)
        return _tokenizers[path]


class PromptMeter:
    """Counts a prompt's tokens for budgets: exactly with the judge's tokenizer (``tokenizer``
    parameter), else :func:`bound_tokens`. ``exact`` says which."""

    def __init__(self, *, tokenizer: str = "") -> None:
        self.tokenizer = None
        if tokenizer:
            from llm_judges.backends import ConfigError

            try:
                self.tokenizer = _tokenizer(tokenizer)
            except Exception as exc:  # a wrong path must fail the run, not pass the budget
                raise ConfigError(
                    f"The judge's tokenizer {tokenizer!r} cannot be loaded: {exc}"
                ) from None

    @property
    def exact(self) -> bool:
        return self.tokenizer is not None

    def prompt_tokens(self, *, messages: Sequence[ChatMessage]) -> int:
        if self.tokenizer is None:
            return bound_tokens(messages=messages)
        plain = [{"role": m["role"], "content": str(m.get("content", ""))} for m in messages]
        if getattr(self.tokenizer, "chat_template", None):
            ids = self.tokenizer.apply_chat_template(
                plain, tokenize=True, add_generation_prompt=True
            )
            if isinstance(ids, dict):  # BatchEncoding in newer transformers
                ids = ids["input_ids"]
            return len(ids) + TOKENIZER_MARGIN
        text = "".join(m["content"] for m in plain)
        return (
            len(self.tokenizer.encode(text))
            + len(plain) * BOUND_TOKENS_PER_MESSAGE
            + BOUND_TEMPLATE_TOKENS
        )


def _counted(rows, **changes) -> int:
    """``rows.update(**changes)`` committed at once without waiting for the WAL to reach the
    disk (PostgreSQL: ``synchronous_commit`` off for this transaction only). A killed worker
    loses nothing by it, since the commit is done when the call returns; only a crash of the
    database server itself could lose the last counts. Two calls per LLM call would otherwise
    wait for a disk flush each (the throughput benchmark halved)."""
    if connection.vendor != "postgresql" or connection.in_atomic_block:
        return rows.update(**changes)
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL synchronous_commit TO OFF")
        return rows.update(**changes)


def reserve_call(*, run: JudgeRun, tokens: int) -> bool:
    """Reserve one call of at most ``tokens`` tokens on the run's budget; False (nothing
    reserved) when either limit would be passed. Without a budget it always succeeds and still
    counts the call (tokens are reserved only under a token budget)."""
    fits = Q(pk=run.pk)
    if run.budget_calls is not None:
        fits &= Q(calls_reserved__lt=F("budget_calls"))
    if run.budget_tokens is not None:
        fits &= Q(tokens_reserved__lte=F("budget_tokens") - tokens)
    else:
        tokens = 0
    changes = {"calls_reserved": F("calls_reserved") + 1}
    if tokens:
        changes["tokens_reserved"] = F("tokens_reserved") + tokens
    return bool(_counted(JudgeRun.objects.filter(fits), **changes))


def count_calls(*, run: JudgeRun, calls: int) -> None:
    """Count ``calls`` calls about to be made by a run without a budget (one UPDATE for all the
    calls a batch starts at once; a budget reserves each call with :func:`reserve_call`)."""
    if calls:
        _counted(JudgeRun.objects.filter(pk=run.pk), calls_reserved=F("calls_reserved") + calls)


def settle_call(*, run: JudgeRun, reserved: int, used: int | None) -> None:
    """Replace a call's reservation by the tokens it used (``used``; None: unknown, the
    reservation stays). Only under a token budget (nothing else was reserved)."""
    if run.budget_tokens is None or used is None or used == reserved:
        return
    _counted(
        JudgeRun.objects.filter(pk=run.pk),
        tokens_reserved=F("tokens_reserved") + used - reserved,
    )
