"""Judges, their runs over projects, and their answers (kept apart from human annotations).

Rules the services rely on:
- ``JudgeResult`` is unique per (item, judge, prompt version, setting): a re-run or a redelivered
  Celery task can only find the stored result, never add a second one. Results are written with
  INSERT … ON CONFLICT DO NOTHING, so the first stored outcome wins.
- At most one pending or running run per (judge, project, prompt version, setting), enforced by a
  partial unique constraint.
- A result points at the run that last claimed it; progress is counted from those rows, and the
  counts are copied onto the run when it ends.
- A judge's kind, model, parameters and prompt version are frozen once it has runs (the admin
  shows them read-only): results do not record them, the judge does.
- Prompts are data: a ``PromptTemplate`` is one version of a wording (unique name + version).
  Once a run used it, it never changes (``save()`` refuses; the admin and ``load_prompt`` save a
  new version instead), and every run records the template it used and its fingerprint.
- ``prompt_version`` on judges, runs and results is the template's key: the built-in version
  ("v1") for the shipped records, ``name@version`` for the others.
- Ownership: a ``ModelEndpoint`` (base URL, the environment variable holding its key, the
  projects that may use it) is staff's, set up in the admin; no other address is ever called. A
  ``Judge`` belongs to one project (its settings are the project's: changing them never changes
  another project's judge); a judge without a project is a staff catalogue entry (the built-in
  ``minilm-similarity``) that projects copy, never run as it is.
"""

import json
from typing import TypedDict

from django.conf import settings
from django.db import models
from django.db.models import Q

PROMPT_KEY_LENGTH = 120


class PromptUsed(Exception):
    """A prompt template that a run used cannot be changed: save a new version."""


class PromptTemplate(models.Model):
    """One version of a judge prompt: a system message and a user template with named
    ``{placeholders}`` that the task type provides, the JSON schema of the answer (blank: the
    task type's own schema for the item), and sampling parameters sent with every call."""

    name = models.CharField(max_length=100)
    version = models.PositiveIntegerField()
    task_type = models.CharField(max_length=50)
    system = models.TextField(blank=True, help_text="System message ({placeholders} allowed).")
    template = models.TextField(
        help_text="The user message with named {placeholders} (write {{ and }} for literal braces)."
    )
    variants = models.JSONField(
        default=dict,
        blank=True,
        help_text="Further templates by item variant (argument structure: filter, compare); an "
        "item whose variant is not here uses the template.",
    )
    output_schema = models.JSONField(
        null=True,
        blank=True,
        help_text="JSON schema of the reply sent as structured output; blank: the task type's "
        "own schema for each item. Replies are read by the task type's parser either way.",
    )
    parameters = models.JSONField(
        default=dict,
        blank=True,
        help_text="Sampling parameters sent with every call, over the judge's: temperature, "
        "max_tokens, seed.",
    )
    note = models.TextField(blank=True, help_text="Where the wording comes from (paper, §).")
    builtin = models.CharField(
        max_length=20,
        blank=True,
        help_text="The built-in version this record ships (v1…); blank for researchers' prompts.",
    )
    fingerprint = models.CharField(max_length=64, editable=False)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["task_type", "name", "-version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="prompttemplate_name_version")
        ]

    def __str__(self) -> str:
        return f"{self.name} v{self.version} ({self.task_type})"

    def save(self, *args, **kwargs):
        if self.pk is not None:
            stored = PromptTemplate.objects.filter(pk=self.pk).first()
            if (
                stored is not None
                and stored.content() != self.content()
                and JudgeRun.objects.filter(prompt_id=self.pk).exists()
            ):
                raise PromptUsed(
                    f"{stored} was used by a run and cannot change; save a new version."
                )
        self.fingerprint = self.compute_fingerprint()
        super().save(*args, **kwargs)

    def clean(self):
        """The content checked as every save path checks it (placeholders the task type
        provides, a JSON schema, sampling parameters): ValidationError naming the field."""
        from django.core.exceptions import ValidationError

        from llm_judges.services.errors import JudgeError
        from llm_judges.services.prompt_templates import clean_template

        try:
            cleaned = clean_template(
                task_type=self.task_type,
                template=self.template,
                system=self.system,
                variants=self.variants,
                output_schema=self.output_schema,
                parameters=self.parameters,
            )
        except JudgeError as exc:
            field = (exc.field or "template").split(".")[0]
            raise ValidationError({field: exc.message}) from None
        for name, value in cleaned.items():
            setattr(self, name, value)

    @property
    def key(self) -> str:
        """What judges, runs and results record as their prompt version."""
        return self.builtin or f"{self.name}@{self.version}"

    CONTENT = ("task_type", "system", "template", "variants", "output_schema", "parameters")

    def compute_fingerprint(self) -> str:
        from llm_judges.prompts import fingerprint_of

        return fingerprint_of(
            system=self.system,
            template=self.template,
            variants=self.variants or {},
            output_schema=self.output_schema,
            parameters=self.parameters or {},
        )

    def content(self) -> str:
        return json.dumps([getattr(self, name) for name in self.CONTENT], sort_keys=True)


class EndpointConnection(TypedDict):
    """Where an LLM judge's calls go (``ModelEndpoint.connection``), merged into its parameters."""

    base_url: str
    api_key_env: str  # the environment variable holding the key, never the key
    allow_private_network: bool


class ModelEndpoint(models.Model):
    """A model server staff approved for judges (like a Label Studio ML-backend connection): the
    only addresses workers call. Researchers choose among the endpoints their projects may use;
    the key stays in the workers' environment and is sent only here."""

    name = models.CharField(max_length=100, unique=True)
    base_url = models.CharField(
        max_length=500,
        help_text="OpenAI-compatible API root, e.g. https://api.openai.com/v1 or http://vllm:8000/v1.",
    )
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="Environment variable of the workers holding the key (…_API_KEY); blank for a "
        "server without keys.",
    )
    all_projects = models.BooleanField(
        default=False, help_text="Every project may use it (otherwise only the projects below)."
    )
    projects = models.ManyToManyField(
        "projects.Project",
        blank=True,
        related_name="model_endpoints",
        help_text="The projects that may use it.",
    )
    allow_private_network = models.BooleanField(
        default=False,
        help_text="Allow loopback, private and link-local addresses (a model server on this "
        "network). Off: such addresses are refused, whatever the host name resolves to.",
    )
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def clean(self):
        from django.core.exceptions import ValidationError

        from llm_judges.parameters import clean_endpoint

        try:
            self.base_url, self.api_key_env = clean_endpoint(
                base_url=self.base_url,
                api_key_env=self.api_key_env,
                allow_private=self.allow_private_network,
            )
        except ValueError as exc:
            field, message = exc.args
            raise ValidationError({field: message}) from None

    def allows(self, project_id: int | None) -> bool:
        """Whether the project may use this endpoint."""
        if self.all_projects:
            return True
        return project_id is not None and self.projects.filter(pk=project_id).exists()

    def connection(self) -> EndpointConnection:
        """What the LLM backend needs of the endpoint (merged into a judge's parameters)."""
        return EndpointConnection(
            base_url=self.base_url,
            api_key_env=self.api_key_env,
            allow_private_network=self.allow_private_network,
        )


class Judge(models.Model):
    class Kind(models.TextChoices):
        LLM = "llm", "LLM (OpenAI-compatible endpoint)"
        NLI = "nli", "NLI model"
        EMBEDDING = "embedding", "Embedding similarity"

    project = models.ForeignKey(
        "projects.Project",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="judges",
        help_text="The project the judge belongs to; blank: a staff catalogue judge that "
        "projects copy.",
    )
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=Kind.choices)
    endpoint = models.ForeignKey(
        ModelEndpoint,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="judges",
        help_text="LLM judges: the staff-approved model server it calls.",
    )
    model = models.CharField(
        max_length=500,
        help_text="LLM: the model name the endpoint serves. NLI: path of a local model directory "
        "on the workers. Embedding: all-MiniLM-L6-v2.",
    )
    parameters = models.JSONField(
        default=dict,
        blank=True,
        help_text="Kind-specific settings (temperature, max_tokens, timeout, concurrency…; "
        "threshold; batch_size…). Defaults are filled in on save. The server comes from the "
        "endpoint.",
    )
    prompt_version = models.CharField(
        max_length=PROMPT_KEY_LENGTH,
        default="v1",
        help_text="The built-in prompt version used when no prompt template is chosen; set from "
        "the template otherwise.",
    )
    prompt = models.ForeignKey(
        PromptTemplate,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="judges",
        help_text="LLM judges: the prompt template; blank: the project's task type's shipped "
        "prompt (its built-in version above).",
    )
    description = models.TextField(blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(
                fields=["project", "name"],
                condition=Q(project__isnull=False),
                name="judge_name_per_project",
            ),
            models.UniqueConstraint(
                fields=["name"], condition=Q(project__isnull=True), name="judge_catalogue_name"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def save(self, *args, **kwargs):
        if self.prompt_id is not None:
            self.prompt_version = self.prompt.key
        super().save(*args, **kwargs)


class JudgeRun(models.Model):
    """One pre-fill of a judge over (a filtered part of) a project."""

    class Status(models.TextChoices):
        PENDING = "pending", "Pending"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    ACTIVE = (Status.PENDING, Status.RUNNING)

    judge = models.ForeignKey(Judge, on_delete=models.RESTRICT, related_name="runs")
    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="judge_runs"
    )
    prompt_version = models.CharField(max_length=PROMPT_KEY_LENGTH)
    prompt = models.ForeignKey(
        PromptTemplate,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="runs",
        help_text="The template the run rendered (runs from before prompts were data: none).",
    )
    prompt_fingerprint = models.CharField(
        max_length=64, blank=True, help_text="sha256 of the template and its parameters."
    )
    setting = models.CharField(max_length=40, blank=True, default="")
    judge_settings = models.JSONField(
        default=dict,
        blank=True,
        help_text="What decided the run's answers besides a prompt: the judge's kind, model and "
        "answer settings (embedding: threshold; NLI: entailment label, model type, direction, "
        "label mapping, input template…; LLM: sampling settings). Embedding and NLI judges use "
        "no prompt: this is their provenance.",
    )
    settings_fingerprint = models.CharField(
        max_length=64, blank=True, help_text="sha256 of judge_settings (canonical JSON)."
    )
    presentation = models.CharField(
        max_length=20,
        blank=True,
        default="",
        help_text="How items were presented: blank as annotators see them; 'reversed' (ranking) "
        "the outputs in reverse order, to measure position bias.",
    )
    budget_calls = models.PositiveIntegerField(
        null=True, blank=True, help_text="LLM: at most this many calls (every attempt counts)."
    )
    budget_tokens = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="LLM: at most this many input + output tokens (each call reserves its "
        "estimate before it is made, corrected to the server's count after).",
    )
    calls_reserved = models.PositiveIntegerField(default=0)
    tokens_reserved = models.BigIntegerField(default=0)
    not_run_count = models.PositiveIntegerField(
        default=0, help_text="Items not run because the budget was reached; copied at the end."
    )
    filters = models.JSONField(default=dict, blank=True)
    items_per_task = models.PositiveIntegerField(default=50)
    total = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.PENDING)
    error = models.TextField(blank=True)
    answered_count = models.PositiveIntegerField(default=0, help_text="Copied when the run ends.")
    unparseable_count = models.PositiveIntegerField(default=0)
    failed_count = models.PositiveIntegerField(default=0)
    structured_output = models.CharField(
        max_length=20,
        blank=True,
        help_text="LLM: the structured-output mode the run asked for (json_schema, "
        "json_object_schema or none).",
    )
    truncated_count = models.PositiveIntegerField(
        default=0,
        help_text="LLM: replies cut at max_tokens (finish reason 'length'); copied at the end.",
    )
    schema_valid_count = models.PositiveIntegerField(
        default=0,
        help_text="LLM: replies that were exactly a JSON value matching the prompt's schema "
        "(a reply cut at max_tokens cannot be; servers do not say whether they honoured the "
        "schema); copied when the run ends.",
    )
    seed = models.BigIntegerField(
        null=True, blank=True, help_text="LLM: the sampling seed sent with every call."
    )
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True,
        blank=True,
        help_text="Last sign of life of one of its batches (or when a scheduled retry is due); "
        "an active run silent for longer than CONCORD_JUDGE_LOST_AFTER_SECONDS is lost.",
    )
    unreachable_since = models.DateTimeField(
        null=True,
        blank=True,
        help_text="LLM: when its server stopped answering (the first connection error after "
        "the last reply); cleared by the next reply. Items are retried until it has been "
        "unreachable for the judge's unreachable_wait.",
    )
    error_excerpt = models.TextField(
        blank=True,
        help_text="Staff only: the server's own message behind a run-level error, bounded and "
        "sanitised (researchers see the status and the error class in 'error').",
    )

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["judge", "project", "prompt_version", "setting", "presentation"],
                condition=Q(status__in=["pending", "running"]),
                name="judgerun_one_active_per_key",
            )
        ]
        indexes = [models.Index(fields=["project", "created_at"], name="judgerun_project_idx")]

    def __str__(self) -> str:
        return f"{self.judge} on {self.project} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE

    @property
    def settings_text(self) -> str:
        """The recorded answer settings, e.g. "threshold 0.6" (kind and model are shown apart)."""
        return ", ".join(
            f"{name} {json.dumps(value, ensure_ascii=False) if isinstance(value, dict) else value}"
            for name, value in sorted((self.judge_settings or {}).items())
            if name not in ("kind", "model")
        )

    @property
    def uses_prompt(self) -> bool:
        """Whether the run rendered a prompt (LLM judges); embedding and NLI judges use none,
        whatever template runs from before issue 27 recorded."""
        return self.judge.kind == Judge.Kind.LLM


class JudgeResult(models.Model):
    """A judge's answer to one item, or why there is none."""

    class Status(models.TextChoices):
        OK = "ok", "Answered"
        UNPARSEABLE = "unparseable", "Unparseable reply"
        FAILED = "failed", "Failed"
        NOT_RUN = "not_run", "Not run: budget"

    item = models.ForeignKey(
        "annotation.Item", on_delete=models.CASCADE, related_name="judge_results"
    )
    judge = models.ForeignKey(Judge, on_delete=models.RESTRICT, related_name="results")
    prompt_version = models.CharField(max_length=PROMPT_KEY_LENGTH)
    setting = models.CharField(max_length=40, blank=True, default="")
    presentation = models.CharField(
        max_length=20,
        blank=True,
        default="",
        help_text="Blank: as annotators see the item; 'reversed': outputs in reverse order.",
    )
    run = models.ForeignKey(
        JudgeRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="results"
    )
    produced_by = models.ForeignKey(
        JudgeRun,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The run whose batch stored this result; never changes (``run`` is the run "
        "that last claimed it, which counts it in its progress).",
    )
    status = models.CharField(max_length=12, choices=Status.choices)
    answer = models.JSONField(null=True, blank=True, help_text="In the task type's answer shape.")
    raw = models.TextField(
        blank=True,
        help_text="The reply as received (LLM); NUL characters and lone surrogates, which "
        "PostgreSQL cannot store, are removed and counted in detail['raw_cleaned'].",
    )
    detail = models.JSONField(
        default=dict, blank=True, help_text="NLI label probabilities or similarities per pair."
    )
    finish_reason = models.CharField(
        max_length=20, blank=True, help_text="LLM: why the reply ended (stop, length…)."
    )
    schema_valid = models.BooleanField(
        null=True,
        blank=True,
        help_text="LLM: whether the reply was exactly a JSON value matching the prompt's schema.",
    )
    seed = models.BigIntegerField(null=True, blank=True, help_text="LLM: the sampling seed sent.")
    error = models.TextField(
        blank=True,
        help_text="Why the reply is unparseable or the call failed (a server's error: its "
        "status and the error class, never its body).",
    )
    error_class = models.CharField(
        max_length=40,
        blank=True,
        help_text="What kind of problem: an LLM error class (unreachable, timeout, "
        "server_error…), unparseable, truncated, budget, time_limit, prompt, internal.",
    )
    error_excerpt = models.TextField(
        blank=True,
        help_text="Staff only: the server's own error message, bounded and sanitised.",
    )
    attempts = models.PositiveSmallIntegerField(default=1)
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["item", "judge", "prompt_version", "setting", "presentation"],
                name="judgeresult_unique_key",
            )
        ]
        indexes = [models.Index(fields=["run", "status"], name="judgeresult_run_idx")]

    def __str__(self) -> str:
        return f"{self.judge_id} on item {self.item_id}: {self.status}"


class JudgeResultCounts(models.Model):
    """How many judge results a project's items have, and a revision that moves with every
    insert, change or delete of one: what the pages' data version reads instead of counting the
    results (``agreement.reports.gather.judges_version``). Kept by database triggers
    (:mod:`llm_judges.counter_triggers`), whatever path writes (runs, retries, item fixes,
    re-imports, bundles, the admin, cascade deletes); a project without a row has none."""

    project = models.OneToOneField(
        "projects.Project", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    results = models.BigIntegerField(default=0)
    revision = models.BigIntegerField(default=0)

    class Meta:
        verbose_name_plural = "judge result counts"

    def __str__(self) -> str:
        return f"{self.results} judge results in project {self.project_id} (rev {self.revision})"


class JudgeCall(models.Model):
    """One call to an LLM endpoint (every attempt, failed ones too): tokens and latency."""

    class Outcome(models.TextChoices):
        OK = "ok", "Answered"
        UNPARSEABLE = "unparseable", "Unparseable reply"
        TRANSIENT = "transient", "Transient error"
        PERMANENT = "permanent", "Permanent error"
        FATAL = "fatal", "Fatal error"

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="calls")
    item = models.ForeignKey("annotation.Item", on_delete=models.CASCADE, related_name="+")
    attempt = models.PositiveSmallIntegerField()
    outcome = models.CharField(max_length=12, choices=Outcome.choices)
    http_status = models.PositiveSmallIntegerField(null=True, blank=True)
    finish_reason = models.CharField(max_length=20, blank=True)
    error = models.TextField(blank=True)
    error_class = models.CharField(max_length=40, blank=True)
    error_excerpt = models.TextField(
        blank=True, help_text="The server's own error message, bounded and sanitised (staff)."
    )
    prompt_tokens = models.PositiveIntegerField(null=True, blank=True)
    completion_tokens = models.PositiveIntegerField(null=True, blank=True)
    latency_ms = models.PositiveIntegerField()
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        indexes = [models.Index(fields=["run", "item"], name="judgecall_run_item_idx")]

    def __str__(self) -> str:
        return f"call for item {self.item_id} (attempt {self.attempt}): {self.outcome}"


class Preselection(models.Model):
    """A project shows this judge's answers to annotators as a pre-selection. No row: off (the
    default, because a visible suggestion anchors people)."""

    project = models.OneToOneField(
        "projects.Project", on_delete=models.CASCADE, related_name="judge_preselection"
    )
    judge = models.ForeignKey(Judge, on_delete=models.RESTRICT, related_name="+")
    prompt_version = models.CharField(max_length=PROMPT_KEY_LENGTH)
    enabled_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    enabled_at = models.DateTimeField(auto_now=True)

    def __str__(self) -> str:
        return f"{self.judge} pre-selects in {self.project}"


class PreselectionShown(models.Model):
    """Record that an annotator was shown a judge's pre-selection on an assignment, and what."""

    assignment = models.OneToOneField(
        "annotation.Assignment", on_delete=models.CASCADE, related_name="judge_preselection_shown"
    )
    judge = models.ForeignKey(Judge, on_delete=models.RESTRICT, related_name="+")
    result = models.ForeignKey(
        JudgeResult, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    answer = models.JSONField()
    shown_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"pre-selection shown on assignment {self.assignment_id}"
