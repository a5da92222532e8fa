"""Admin for judges (configuration), runs (watch, cancel), results and calls (read-only).

A judge's kind, model, parameters and prompt version become read-only once it has runs:
results are keyed by judge and prompt version only, so changing what produced them would mix
two judges under one name. Create a new judge instead.
"""

from django import forms
from django.contrib import admin, messages
from django.urls import reverse
from django.utils.html import format_html
from rest_framework import serializers

from llm_judges import services
from llm_judges.models import (
    Judge,
    JudgeCall,
    JudgeResult,
    JudgeRun,
    Preselection,
    PreselectionShown,
)
from llm_judges.parameters import clean_model, clean_parameters
from projects.admin import ProjectScopedAdmin

FROZEN = ["kind", "model", "parameters", "prompt_version"]


class JudgeForm(forms.ModelForm):
    class Meta:
        model = Judge
        fields = ["name", "kind", "model", "parameters", "prompt_version", "description"]

    def clean(self):
        cleaned = super().clean()
        kind = cleaned.get("kind") or (self.instance.kind if self.instance.pk else None)
        if not kind:
            return cleaned
        if "parameters" in self.fields:
            try:
                cleaned["parameters"] = clean_parameters(kind, cleaned.get("parameters"))
            except serializers.ValidationError as exc:
                self.add_error("parameters", f"Invalid parameters for a {kind} judge: {exc.detail}")
        if "model" in self.fields:
            try:
                cleaned["model"] = clean_model(kind, cleaned.get("model", ""))
            except serializers.ValidationError as exc:
                self.add_error("model", str(exc.detail.get("model", exc.detail)))
        return cleaned


@admin.register(Judge)
class JudgeAdmin(admin.ModelAdmin):
    """Judges are shared by every project (no project of their own): not scoped."""

    form = JudgeForm
    list_display = ["name", "kind", "model", "prompt_version", "updated_at"]
    list_filter = ["kind"]
    search_fields = ["name", "model"]

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.runs.exists():
            return FROZEN
        return []


@admin.register(JudgeRun)
class JudgeRunAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    list_display = ["id", "judge", "project", "setting", "status", "progress", "created_at", "page"]
    list_filter = ["status", "judge"]
    list_select_related = ["judge", "project"]
    search_fields = ["project__slug", "judge__name"]
    actions = ["cancel_runs"]
    readonly_fields = [f.name for f in JudgeRun._meta.fields]

    def has_add_permission(self, request):
        return False  # runs start from the project's judge page or `run_judge`

    @admin.display(description="Progress")
    def progress(self, obj):
        done = obj.answered_count + obj.unparseable_count
        return f"{done} done, {obj.failed_count} failed of {obj.total}"

    @admin.display(description="Page")
    def page(self, obj):
        url = reverse("judge-run", args=[obj.project.slug, obj.pk])
        return format_html('<a href="{}">open</a>', url)

    @admin.action(description="Cancel the selected runs")
    def cancel_runs(self, request, queryset):
        cancelled = sum(services.judge_run_cancel(run=run) for run in queryset)
        self.message_user(request, f"Cancelled {cancelled} run(s).", messages.SUCCESS)


class ReadOnlyAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(JudgeResult)
class JudgeResultAdmin(ReadOnlyAdmin):
    project_path = "item__project"
    list_display = [
        "item",
        "judge",
        "prompt_version",
        "setting",
        "status",
        "latency_ms",
        "created_at",
    ]
    list_filter = ["status", "judge", "setting"]
    list_select_related = ["item", "judge"]
    search_fields = ["item__external_id", "raw", "error"]
    raw_id_fields = ["item", "run"]


@admin.register(JudgeCall)
class JudgeCallAdmin(ReadOnlyAdmin):
    project_path = "run__project"
    list_display = [
        "run",
        "item",
        "attempt",
        "outcome",
        "http_status",
        "latency_ms",
        "prompt_tokens",
        "completion_tokens",
    ]
    list_filter = ["outcome"]
    list_select_related = ["run", "item"]
    raw_id_fields = ["item", "run"]


@admin.register(Preselection)
class PreselectionAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    list_display = ["project", "judge", "prompt_version", "enabled_by", "enabled_at"]
    list_select_related = ["project", "judge", "enabled_by"]
    readonly_fields = ["enabled_by", "enabled_at"]


@admin.register(PreselectionShown)
class PreselectionShownAdmin(ReadOnlyAdmin):
    project_path = "assignment__project"
    list_display = ["assignment", "judge", "shown_at"]
    list_select_related = ["assignment", "judge"]
    raw_id_fields = ["assignment", "result"]
