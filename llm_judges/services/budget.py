"""A run's budget of calls and tokens, enforced across its batches and workers by the database.

Before each LLM call a batch reserves it (``reserve_call``): one call and the call's token
estimate (the prompt's estimated tokens plus ``max_tokens``, the most the reply may use), in one
conditional UPDATE, so concurrent batches can never reserve past the limit. After the call the
estimate is replaced by the tokens the server counted (``settle_call``). A call that cannot be
reserved is never made: its item, and every item the batch has not called yet, is stored as
"not run: budget".

Token counts before a call are estimates: ``estimate_tokens`` counts about four characters per
token (the rule of thumb for English with GPT-style tokenizers) plus a few tokens per message;
the usage the server reports is what the run's usage shows.
"""

from __future__ import annotations

from collections.abc import Sequence
from math import ceil

from django.db.models import F, Q

from llm_judges.models import JudgeRun

CHARS_PER_TOKEN = 4
TOKENS_PER_MESSAGE = 4  # role and separators of the chat format
NOT_RUN_MESSAGE = "not run: budget"


def estimate_tokens(*, messages: Sequence[dict]) -> int:
    """About how many prompt tokens ``messages`` take (see the module's docstring)."""
    return sum(
        TOKENS_PER_MESSAGE + ceil(len(str(m.get("content", ""))) / CHARS_PER_TOKEN)
        for m in messages
    )


def reserve_call(*, run: JudgeRun, tokens: int) -> bool:
    """Reserve one call of about ``tokens`` tokens on the run's budget; False (nothing
    reserved) when either limit would be passed. Without a budget, always True."""
    if run.budget_calls is None and run.budget_tokens is None:
        return True
    fits = Q(pk=run.pk)
    if run.budget_calls is not None:
        fits &= Q(calls_reserved__lt=F("budget_calls"))
    if run.budget_tokens is not None:
        fits &= Q(tokens_reserved__lte=F("budget_tokens") - tokens)
    return bool(
        JudgeRun.objects.filter(fits).update(
            calls_reserved=F("calls_reserved") + 1, tokens_reserved=F("tokens_reserved") + tokens
        )
    )


def settle_call(*, run: JudgeRun, reserved: int, used: int | None) -> None:
    """Replace a call's reserved estimate by the tokens the server counted (when it did)."""
    if used is None or (run.budget_calls is None and run.budget_tokens is None):
        return
    JudgeRun.objects.filter(pk=run.pk).update(
        tokens_reserved=F("tokens_reserved") + used - reserved
    )
