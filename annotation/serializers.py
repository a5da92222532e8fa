"""Request bodies of the annotator API (answers themselves are validated by the task type)."""

from rest_framework import serializers


class NextSerializer(serializers.Serializer):
    start_batch = serializers.BooleanField(default=False)


class DraftSerializer(serializers.Serializer):
    answer = serializers.JSONField()
    time_spent_ms = serializers.IntegerField(min_value=0, default=0)
    revision = serializers.IntegerField(min_value=0)


class SubmitSerializer(serializers.Serializer):
    answer = serializers.JSONField()
    time_spent_ms = serializers.IntegerField(min_value=0, default=0)
    submission_id = serializers.UUIDField(required=False)
    revision = serializers.IntegerField(
        min_value=0, default=0, help_text="Draft revision submitted."
    )


class HistoryEntrySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    sequence = serializers.IntegerField()
    state = serializers.CharField()
    status = serializers.SerializerMethodField(help_text="In words: submitted, saved, not started")
    headline = serializers.SerializerMethodField(help_text="The item's first words (its claim)")
    reserved_at = serializers.DateTimeField()
    submitted_at = serializers.DateTimeField(allow_null=True)

    def get_status(self, assignment) -> str:
        if assignment.state == "submitted":
            return "submitted"
        if assignment.state == "expired":
            return "expired"
        return "saved" if getattr(assignment, "has_draft", False) else "not started"

    def get_headline(self, assignment) -> str:
        from annotation import task_types

        project_task_type = self.context.get("task_type")
        task_type = project_task_type or task_types.get(assignment.project.task_type)
        words = task_type.headline(assignment.item.payload).split()
        return " ".join(words[:8]) + (" …" if len(words) > 8 else "")
