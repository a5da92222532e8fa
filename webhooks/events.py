"""The events a project's webhooks can subscribe to, with what each payload's ``data`` holds."""

from __future__ import annotations

ANSWER_SUBMITTED = "answer.submitted"
ITEM_COMPLETE = "item.complete"
BATCH_FINISHED = "batch.finished"
IMPORT_FINISHED = "import.finished"
JUDGE_RUN_FINISHED = "judge_run.finished"
AGREEMENT_SNAPSHOT_READY = "agreement_snapshot.ready"
FLAG_RAISED = "flag.raised"

EVENTS: dict[str, str] = {
    ANSWER_SUBMITTED: "An answer was submitted or revised (annotation id, version, item, "
    "annotator pseudonym, the answer).",
    ITEM_COMPLETE: "An item received its last required answer (once per item).",
    BATCH_FINISHED: "An annotator finished a batch (a crowd session's HIT or a qualification "
    "round): batch id, kind, annotator pseudonym, platform session.",
    IMPORT_FINISHED: "An item import job ended: job id, status (done or failed), message, counts.",
    JUDGE_RUN_FINISHED: "A judge run ended: run id, judge, status (done, failed, cancelled), "
    "counts.",
    AGREEMENT_SNAPSHOT_READY: "An agreement report finished computing: snapshot id, answers.",
    FLAG_RAISED: "An annotator flagged or skipped an item: flag id, item, annotator pseudonym, "
    "reason, words, whether they skipped it.",
}
