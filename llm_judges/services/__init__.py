"""Judges: configure them, run them over projects, cancel runs, show pre-selections.

One module per concern; this package re-exports their public names, so callers write
``from llm_judges import services`` and ``services.judge_run_start(...)``:

- :mod:`.configuration`: a project's judges (``judge_create``, ``judge_copy``), where an LLM
  judge's calls go (``judge_connection``: its staff-approved endpoint), and the prompt a judge
  uses on a project.
- :mod:`.prompt_templates`: prompts as data (saving versions, the shipped records, rendering).
- :mod:`.budget`: a run's budget of calls and tokens, reserved before each call.
- :mod:`.runs`: starting, cancelling, finishing and resuming runs (filters, enqueueing,
  counts, the periodic takeover of lost runs).
- :mod:`.batch_engine`: processing one batch, the Celery task's body (LLM, NLI and embedding
  judges, outcome storage, backoff).
- :mod:`.preselection`: showing a judge's answers to annotators.
- :mod:`.sampling`: active sampling's item weights and priorities from the judges' uncertainty.
- :mod:`.errors`: ``JudgeError``, the services' :class:`~core.errors.Refusal`.

The flow of a run: ``judge_run_start`` selects the items, claims results that already exist and,
after the transaction commits, enqueues one Celery task per batch of item ids. Each task calls
``judge_batch_process``, which is idempotent: items that already have a result for the run's key
are skipped, and results are inserted with ON CONFLICT DO NOTHING, so a redelivered task (worker
killed, visibility timeout) or a re-run never stores a second result.

Errors: a reply that cannot be parsed is stored as ``unparseable`` with the raw text; a
permanent error (400, 422…) is stored per item as ``failed`` with the message; a transient one
(timeout, connection, 429, 5xx) sends the item back to the task, which retries it with
exponential backoff and jitter until ``max_attempts``; a fatal one (401, 403, 404, missing API key
or model) fails the whole run at once.

A run always ends: while it is active, every item of a batch leaves with a result or as a retry
(the soft time limit, an unexpected exception or a retry the broker refuses store ``failed``
results with the reason), and a result of the run's key counts for the active run whichever batch
wrote it (a cancelled run's call may answer after a restart counted the item as pending). So the
counts reach the total, and the run is marked done.
"""

from llm_judges.services.batch_engine import (
    PROCESSORS,
    BatchReport,
    backoff_seconds,
    judge_batch_give_up,
    judge_batch_process,
)
from llm_judges.services.configuration import (
    endpoint_check,
    judge_copy,
    judge_create,
    judge_endpoint_set,
    kind_check,
    kinds_supported,
)
from llm_judges.services.errors import JudgeError
from llm_judges.services.preselection import (
    preselection_disable,
    preselection_enable,
    preselection_show,
)
from llm_judges.services.prompt_templates import (
    prompt_template_revise,
    prompt_template_save,
    shipped_template,
    template_for,
)
from llm_judges.services.runs import (
    ResumedRun,
    RunFilters,
    StartedRun,
    batches,
    clean_budget,
    clean_filters,
    dealt_batches,
    judge_run_cancel,
    judge_run_heartbeat,
    judge_run_start,
    judge_run_start_both_orders,
    judge_run_start_both_orders_pending,
    judge_run_start_pending,
    judge_runs_resume_lost,
    lost_runs,
)
from llm_judges.services.sampling import (
    SamplingStatus,
    SamplingWeights,
    item_uncertainties,
    sampling_status,
    sampling_weights_compute,
)

__all__ = [
    "PROCESSORS",
    "SamplingStatus",
    "SamplingWeights",
    "item_uncertainties",
    "sampling_status",
    "sampling_weights_compute",
    "BatchReport",
    "JudgeError",
    "ResumedRun",
    "RunFilters",
    "StartedRun",
    "backoff_seconds",
    "batches",
    "clean_budget",
    "clean_filters",
    "dealt_batches",
    "judge_batch_give_up",
    "judge_batch_process",
    "endpoint_check",
    "judge_copy",
    "judge_create",
    "judge_endpoint_set",
    "kind_check",
    "kinds_supported",
    "judge_run_cancel",
    "judge_run_heartbeat",
    "judge_run_start",
    "judge_run_start_both_orders",
    "judge_run_start_both_orders_pending",
    "judge_run_start_pending",
    "judge_runs_resume_lost",
    "lost_runs",
    "preselection_disable",
    "preselection_enable",
    "preselection_show",
    "prompt_template_revise",
    "prompt_template_save",
    "shipped_template",
    "template_for",
]
