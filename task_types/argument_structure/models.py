"""What argument structure stores of its own: CheckWhy's metrics of each human answer (issue 34).

An export's rows carry the metrics of the answer's structure and of the item's draft against the
reference (:func:`metrics.argument_structure.structure_metrics`, Structure Similarity with the
project's scorer, MiniLM by default). Computed on every export they kept it at ~1k rows/s; they
are now stored per answer the first time an export, a worker's preparation of the export columns
(``studies.prepare_export_columns``, Celery beat, minutes after answers arrive) or ``manage.py
argument_structure_metrics`` computes them, in bulk, and read after that. Nothing is computed on
an annotator's submit: no model call on that path.

``key`` is the sha256 of everything the values depend on (the answer's steps and evidence, the
item's evidence, draft and reference, the scorer's name, :data:`METRICS_VERSION`): a fixed item,
a changed scorer or a new version of the metrics makes the stored values stale, and the export
computes them anew (and stores them) instead of serving them.
"""

from __future__ import annotations

from django.db import models

METRICS_VERSION = 1  # raise when structure_metrics or the stored layout changes


class StoredMetrics(models.Model):
    """The metrics of one human answer's structure, as its export row writes them."""

    annotation = models.OneToOneField(
        "annotation.Annotation",
        on_delete=models.CASCADE,
        primary_key=True,
        related_name="+",
    )
    key = models.CharField(max_length=64, help_text="sha256 of what the values depend on.")
    values = models.JSONField(
        help_text="[the answer's metrics, the draft's metrics or null], each a list of values "
        "in the order of serializers.METRIC_KEYS."
    )

    class Meta:
        verbose_name_plural = "stored metrics"

    def __str__(self) -> str:
        return f"metrics of answer {self.annotation_id}"
