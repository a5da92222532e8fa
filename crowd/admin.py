"""Admin views of crowd sessions, batches and adjudications (read-mostly: the workflow and the
researcher pages change them)."""

from django.contrib import admin

from annotation.models import Adjudication, Batch
from crowd.models import CrowdEntry, PlatformAction
from projects.admin import ProjectScopedAdmin


@admin.register(CrowdEntry)
class CrowdEntryAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    list_display = [
        "worker_id",
        "platform",
        "study_id",
        "session_id",
        "hit_id",
        "project",
        "created_at",
        "closed_at",
    ]
    list_filter = ["platform", "project"]
    search_fields = ["worker_id", "session_id", "study_id", "hit_id"]
    list_select_related = ["project"]
    readonly_fields = [f.name for f in CrowdEntry._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(PlatformAction)
class PlatformActionAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    """The ledger of platform actions, read-only: only ``crowd.actions`` writes it (a row changed
    by hand could send an action twice)."""

    list_display = ["kind", "platform", "worker_id", "session_id", "state", "project", "updated_at"]
    list_filter = ["platform", "kind", "state", "project"]
    search_fields = ["worker_id", "session_id", "request_id"]
    list_select_related = ["project"]
    readonly_fields = [f.name for f in PlatformAction._meta.fields]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Batch)
class BatchAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    list_display = [
        "annotator",
        "project",
        "kind",
        "number",
        "state",
        "size",
        "code",
        "created_at",
        "finished_at",
    ]
    list_filter = ["project", "kind", "state"]
    search_fields = ["annotator__username", "code", "external_ref"]
    list_select_related = ["annotator", "project"]
    readonly_fields = [f.name for f in Batch._meta.fields]

    def has_add_permission(self, request):
        return False


@admin.register(Adjudication)
class AdjudicationAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    project_path = "item__project"
    list_display = ["item", "reviewer", "version", "is_current", "created_at"]
    list_filter = ["item__project", "is_current"]
    search_fields = ["item__external_id", "reviewer__username"]
    list_select_related = ["item", "reviewer"]

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False
