from rest_framework import serializers

from annotation.models import Item
from projects.models import Project


class ProjectSerializer(serializers.ModelSerializer):
    role = serializers.SerializerMethodField()

    class Meta:
        model = Project
        fields = ["slug", "name", "task_type", "status", "annotators_per_item", "role"]

    def get_role(self, project) -> str:
        roles = self.context.get("roles", {})
        return roles.get(project.id, "researcher")


class ItemSerializer(serializers.ModelSerializer):
    class Meta:
        model = Item
        fields = [
            "id",
            "external_id",
            "kind",
            "group",
            "position",
            "payload",
            "prepared",
            "gold",
            "assigned_count",
            "revision",
            "created_at",
        ]


class ItemFixSerializer(serializers.Serializer):
    record = serializers.DictField(
        help_text="The item's whole record, as an import line of the task type (the item keeps "
        "its id and kind)."
    )
    note = serializers.CharField(max_length=2000, required=False, allow_blank=True, default="")


class ImportSerializer(serializers.Serializer):
    file = serializers.FileField()
    format = serializers.CharField(
        default="detect",
        help_text="jsonl, csv, a format of the task type, or detect (the default): the format "
        "whose reader takes a first record from the file's beginning.",
    )
    update = serializers.BooleanField(default=False)
    mapping = serializers.FileField(
        required=False, help_text="Mapping file for formats that need one."
    )


class AnnotationImportSerializer(serializers.Serializer):
    file = serializers.FileField()
    format = serializers.CharField()
    source = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
    skip_unknown_items = serializers.BooleanField(default=False)
    mapping = serializers.FileField(
        required=False, help_text="Mapping file for formats that need one (reprohum-ranks)."
    )


class LabelStudioImportSerializer(serializers.Serializer):
    file = serializers.FileField(help_text="The Label Studio JSON export (a list of tasks).")
    labeling_config = serializers.FileField(help_text="The project's labeling config (XML).")
    source = serializers.CharField(max_length=200, required=False, allow_blank=True, default="")
