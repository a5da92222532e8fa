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
    reserved_at = serializers.DateTimeField()
    submitted_at = serializers.DateTimeField(allow_null=True)
