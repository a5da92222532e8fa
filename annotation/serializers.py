"""Request bodies of the annotator API (answers themselves are validated by the task type)."""

from rest_framework import serializers

from core.json_safety import json_problem

MAX_REVISION = 2**31 - 1  # the column's range
MAX_TIME_SPENT_MS = 7 * 24 * 3600 * 1000  # a week of active time on one item


class SafeJSONField(serializers.JSONField):
    """JSON that can be stored as it came: no NUL, no lone surrogate, finite numbers, bounded
    depth and integers (``core.json_safety``)."""

    def to_internal_value(self, data):
        value = super().to_internal_value(data)
        problem = json_problem(value)
        if problem:
            raise serializers.ValidationError(problem)
        return value


class NextSerializer(serializers.Serializer):
    start_batch = serializers.BooleanField(default=False)


class DraftSerializer(serializers.Serializer):
    answer = SafeJSONField()
    time_spent_ms = serializers.IntegerField(min_value=0, max_value=MAX_TIME_SPENT_MS, default=0)
    revision = serializers.IntegerField(min_value=0, max_value=MAX_REVISION)


class SubmitSerializer(serializers.Serializer):
    answer = SafeJSONField()
    time_spent_ms = serializers.IntegerField(min_value=0, max_value=MAX_TIME_SPENT_MS, default=0)
    submission_id = serializers.UUIDField(required=False)
    revision = serializers.IntegerField(
        min_value=0, max_value=MAX_REVISION, default=0, help_text="Draft revision submitted."
    )


class HistoryEntrySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    sequence = serializers.IntegerField()
    state = serializers.CharField()
    status = serializers.SerializerMethodField(help_text="In words: submitted, saved, not started")
    headline = serializers.SerializerMethodField(help_text="The item's first words (its claim)")
    reference = serializers.SerializerMethodField(help_text="The item's short reference, #…")
    reserved_at = serializers.DateTimeField()
    submitted_at = serializers.DateTimeField(allow_null=True)

    def get_status(self, assignment) -> str:
        if assignment.state == "submitted":
            return "submitted"
        if assignment.state == "expired":
            return "expired"
        if assignment.state == "skipped":
            return "skipped"
        return "saved" if getattr(assignment, "has_draft", False) else "not started"

    def get_reference(self, assignment) -> str:
        from annotation.references import item_reference

        return item_reference(item_id=assignment.item_id)

    def get_headline(self, assignment) -> str:
        from annotation import task_types

        project_task_type = self.context.get("task_type")
        task_type = project_task_type or task_types.get(assignment.project.task_type)
        words = task_type.headline(assignment.item.payload).split()
        return " ".join(words[:8]) + (" …" if len(words) > 8 else "")


class FlagSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=100, allow_blank=True, default="")
    text = serializers.CharField(max_length=2000, allow_blank=True, default="")
    skip = serializers.BooleanField(default=False)


class SkipSerializer(serializers.Serializer):
    reason = serializers.CharField(max_length=100, allow_blank=True, default="")
    text = serializers.CharField(max_length=2000, allow_blank=True, default="")


class FlagActionSerializer(serializers.Serializer):
    action = serializers.ChoiceField(
        choices=("answer", "resolve", "exclude", "include", "reopen_item")
    )
    response = serializers.CharField(max_length=2000, allow_blank=True, default="")


class CommentSerializer(serializers.Serializer):
    body = serializers.CharField(max_length=5000)


class SendBackSerializer(serializers.Serializer):
    annotation = serializers.IntegerField(min_value=1, max_value=2**63 - 1)
    note = serializers.CharField(max_length=2000)
