"""The item browser's stored per-item figures, and import jobs with their stored uploads. A study
file's judges are the project's own judges (``llm_judges.Judge.project``), not a table here.

``ImportJob`` and ``ImportJobPart`` were made in ``projects`` and moved here beside their service,
view and task without moving their tables (``db_table``; migrations ``projects`` 0014 and
``studies`` 0004 change Django's state only, so every row stays where it was)."""

from django.conf import settings
from django.db import models


class ItemFigures(models.Model):
    """What the item browser sorts and filters an item by that is not a column of the item:
    agreement among its annotators and their score against gold. Rebuilt for the whole project
    by ``studies.services.item_figures`` whenever the project's data version moves (a new
    answer, a changed qualification, an import…); read, never written, by the browser."""

    item = models.OneToOneField(
        "annotation.Item",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="browser_figures",
    )
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    counted = models.PositiveIntegerField(
        default=0, help_text="Current answers of annotators who count (not disqualified)."
    )
    agreement = models.FloatField(
        null=True,
        help_text="Observed agreement: the share of pairs of counted answers that agree on the "
        "task type's agreement key; empty below two answers.",
    )
    gold_score = models.FloatField(
        null=True,
        help_text="Share of the counted answers the task type scores correct against gold; "
        "empty without gold or answers.",
    )

    class Meta:
        verbose_name_plural = "item figures"
        indexes = [
            models.Index(fields=["project", "agreement", "item"], name="itemfigures_agreement_idx"),
            models.Index(fields=["project", "gold_score", "item"], name="itemfigures_gold_idx"),
        ]

    def __str__(self) -> str:
        return f"figures of item {self.item_id}"


class ItemJudgeFigures(models.Model):
    """How one judge's answer to an item compares with the item's counted human answers: the
    share of them with the judge's agreement key (more than half: the judge holds the humans'
    majority). Rebuilt with :class:`ItemFigures`."""

    item = models.ForeignKey(
        "annotation.Item", on_delete=models.CASCADE, related_name="browser_judge_figures"
    )
    judge = models.ForeignKey("llm_judges.Judge", on_delete=models.CASCADE, related_name="+")
    project = models.ForeignKey("projects.Project", on_delete=models.CASCADE, related_name="+")
    humans_agreeing = models.FloatField(
        null=True, help_text="Share of counted human answers equal to the judge's; empty without."
    )

    class Meta:
        verbose_name_plural = "item judge figures"
        constraints = [
            models.UniqueConstraint(fields=["item", "judge"], name="itemjudgefigures_unique")
        ]
        indexes = [
            models.Index(
                fields=["project", "judge", "humans_agreeing", "item"],
                name="itemjudgefigures_sort_idx",
            )
        ]

    def __str__(self) -> str:
        return f"judge {self.judge_id} on item {self.item_id}"


class ItemFiguresState(models.Model):
    """Which data version a project's item figures were computed from, and a refresh under way."""

    project = models.OneToOneField(
        "projects.Project", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    version = models.CharField(max_length=64, blank=True, help_text="Digest of the data version.")
    computed_at = models.DateTimeField(null=True, blank=True)
    refreshing_since = models.DateTimeField(
        null=True, blank=True, help_text="A refresh was queued or started then (none: idle)."
    )
    error = models.TextField(blank=True)

    def __str__(self) -> str:
        return f"item figures of project {self.project_id}"


class ExportColumnsState(models.Model):
    """The data version a project's stored export columns (:class:`ReadyExportColumns`) were
    last prepared at by a worker (``studies.prepare_export_columns``): the project's answers
    revision and items revision (kept by triggers) and its ``updated_at`` (its config). Beat
    queues a preparation only for a project whose version has moved since."""

    project = models.OneToOneField(
        "projects.Project", on_delete=models.CASCADE, primary_key=True, related_name="+"
    )
    version = models.CharField(max_length=200, help_text="answers:items:project updated_at")
    prepared_at = models.DateTimeField()

    def __str__(self) -> str:
        return f"export columns of project {self.project_id} prepared at {self.version}"


class ImportJob(models.Model):
    """An uploaded file waiting to be imported by a Celery worker.

    Imports run in a worker, not in the web request: some task types embed text with a model at
    import (stance), and large files take minutes. The upload is kept in the database rather
    than on a shared disk, so web and worker containers need no common volume; it is cleared once
    the import succeeds. The upload is stored in ``ImportJobPart`` pieces of at most
    ``PART_BYTES``, so neither the web process that stores it nor the worker that reads it ever
    holds the whole file.
    """

    PART_BYTES = 1024 * 1024

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        FAILED = "failed", "Failed"
        CANCELLED = "cancelled", "Cancelled"

    project = models.ForeignKey(
        "projects.Project", on_delete=models.CASCADE, related_name="import_jobs"
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+"
    )
    filename = models.CharField(max_length=255)
    fmt = models.CharField(max_length=40)
    update = models.BooleanField(default=False)
    options = models.JSONField(
        default=dict, blank=True, help_text="Reader options, e.g. the mapping file of reprohum."
    )
    size = models.PositiveBigIntegerField(default=0, help_text="Bytes uploaded.")
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    message = models.TextField(
        blank=True, help_text="The import's summary, or why nothing was imported."
    )
    report = models.JSONField(default=dict, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(
        null=True, blank=True, help_text="When a worker took the job (again, after a redelivery)."
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "projects_importjob"  # made in projects (migration 0003), moved here in state
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"import of {self.filename} into {self.project.slug} ({self.status})"


class ImportJobPart(models.Model):
    """One piece of an import job's upload, in order (``index`` from 0)."""

    job = models.ForeignKey(ImportJob, on_delete=models.CASCADE, related_name="parts")
    index = models.PositiveIntegerField()
    data = models.BinaryField()

    class Meta:
        db_table = "projects_importjobpart"  # made in projects (0007), moved here in state
        constraints = [
            models.UniqueConstraint(fields=["job", "index"], name="import_job_part_once")
        ]

    def __str__(self) -> str:
        return f"part {self.index} of import job {self.job_id}"


class ReadyExportColumns(models.Model):
    """A human answer's own export columns, stored ready to write (issue 34: argument
    structure's 100k export spent ~80 µs of Python per row decoding the item's and the answer's
    JSON and building and writing the task type's 70-odd columns). Only for task types that
    set ``TaskType.export_columns_stored``. Written by the export the first time it makes an
    answer's rows (``studies.services.export_columns``), read by every export after that and
    passed through undecoded while ``key`` still matches what the columns were made from (the
    item's exported JSON, the answer, the project's config, the task type and its
    ``export_columns_version``); a stale row is made anew and replaced, never served."""

    annotation = models.OneToOneField(
        "annotation.Annotation",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="ready_export",
    )
    key = models.CharField(max_length=64, help_text="sha256 of what the columns depend on.")
    rows = models.PositiveSmallIntegerField(
        null=True,
        help_text="The answer's export rows; empty where they cannot be passed through (a row "
        "whose columns repeat a shared column's name, an empty row, rows with different "
        "columns): then only ``agreement`` is served and the rows are made as before.",
    )
    jsonl = models.TextField(
        help_text="Each row's own columns as orjson writes them, one line each (``\\n``)."
    )
    csv = models.TextField(
        help_text="The rows' own CSV cells as the export writes them, joined by ``,``: one row's "
        "text, or a JSON list of texts for several rows."
    )
    columns = models.TextField(help_text="The rows' column names, a JSON list.")
    columns_key = models.CharField(
        max_length=64, help_text="sha256 of ``columns`` (what an export compares, not the names)."
    )
    agreement = models.TextField(help_text="The answer's agreement key, as the majority counts it.")

    class Meta:
        verbose_name_plural = "ready export columns"

    def __str__(self) -> str:
        return f"export columns of answer {self.annotation_id}"
