"""The item browser's stored per-item figures. A study file's judges are the project's own
judges (``llm_judges.Judge.project``), not a table here."""

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
