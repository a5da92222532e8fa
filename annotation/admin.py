from django.contrib import admin

from annotation.models import Annotation, Assignment, Item
from projects.admin import ProjectScopedAdmin


@admin.register(Item)
class ItemAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    list_display = ["external_id", "project", "kind", "group", "assigned_count", "position"]
    list_filter = ["project", "kind", "group"]
    search_fields = ["external_id"]
    list_select_related = ["project"]
    readonly_fields = ["assigned_count"]


@admin.register(Assignment)
class AssignmentAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    list_display = [
        "item",
        "annotator",
        "project",
        "state",
        "reserved_at",
        "expires_at",
        "submitted_at",
    ]
    list_filter = ["project", "state"]
    search_fields = ["item__external_id", "annotator__username"]
    list_select_related = ["item", "annotator", "project"]
    raw_id_fields = ["item", "annotator"]


@admin.register(Annotation)
class AnnotationAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    """Read-only: answers are changed only by their annotators (as new versions)."""

    project_path = "item__project"

    list_display = ["item", "annotator", "version", "is_current", "time_spent_ms", "created_at"]
    list_filter = ["item__project", "is_current"]
    search_fields = ["item__external_id", "annotator__username"]
    list_select_related = ["item", "annotator"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
