from django import forms
from django.contrib import admin
from django.db.models import Count, Q
from django.urls import reverse
from django.utils.html import format_html

from annotation import task_types
from annotation.models import Assignment
from projects.admin import ProjectScopedAdmin
from projects.models import Membership, Project
from projects.services import researcher_add


class MembershipInline(ProjectScopedAdmin, admin.TabularInline):
    model = Membership
    extra = 1
    autocomplete_fields = ["user"]
    readonly_fields = ["pseudonym"]
    fields = ["user", "role", "qualification", "pseudonym", "removed_at"]


class ProjectForm(forms.ModelForm):
    """Task type chosen from the registry; config validated (and defaults filled) by it."""

    task_type = forms.ChoiceField(choices=task_types.choices)

    class Meta:
        model = Project
        fields = [
            "slug",
            "name",
            "task_type",
            "status",
            "annotators_per_item",
            "config",
            "crowd",
            "guidelines",
            "created_by",
        ]

    def clean(self):
        cleaned = super().clean()
        slug = cleaned.get("task_type")
        if slug:
            from rest_framework.exceptions import ValidationError

            try:
                cleaned["config"] = dict(
                    task_types.get(slug).validate_config(cleaned.get("config") or {})
                )
            except ValidationError as exc:
                self.add_error("config", f"Invalid configuration for {slug}: {exc.detail}")
        return cleaned


@admin.register(Project)
class ProjectAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    project_path = ""
    form = ProjectForm
    list_display = [
        "name",
        "slug",
        "task_type",
        "status",
        "annotators_per_item",
        "item_count",
        "progress",
        "page",
    ]
    list_filter = ["task_type", "status"]
    search_fields = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}
    ordering = ["-created_at"]  # explicit: the counts' GROUP BY drops Meta.ordering
    inlines = [MembershipInline]

    def get_readonly_fields(self, request, obj=None):
        # A choice of creator would list every account, other projects' crowd workers included.
        if request.user.is_superuser:
            return super().get_readonly_fields(request, obj)
        return [*super().get_readonly_fields(request, obj), "created_by"]

    def get_queryset(self, request):
        # Counts in the list query itself: no query per row.
        return (
            super()
            .get_queryset(request)
            .annotate(
                _items=Count("items", filter=Q(items__kind="regular"), distinct=True),
                _submitted=Count(
                    "items__assignments",
                    filter=Q(items__assignments__state=Assignment.State.SUBMITTED),
                    distinct=True,
                ),
            )
        )

    @admin.display(description="Items", ordering="_items")
    def item_count(self, obj):
        return obj._items

    @admin.display(description="Progress")
    def progress(self, obj):
        needed = obj._items * obj.annotators_per_item
        percent = 100 * obj._submitted / needed if needed else 0
        return f"{obj._submitted} / {needed} answers ({percent:.0f} %)"

    @admin.display(description="Dashboard")
    def page(self, obj):
        return format_html('<a href="{}">open</a>', reverse("project-detail", args=[obj.slug]))

    def save_model(self, request, obj, form, change):
        if not change and obj.created_by_id is None:
            obj.created_by = request.user
        super().save_model(request, obj, form, change)
        if not change and not request.user.is_superuser:
            researcher_add(project=obj, user=request.user)  # or they could not open it


@admin.register(Membership)
class MembershipAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    list_display = ["user", "project", "role", "qualification", "pseudonym", "removed_at"]
    list_filter = ["role", "qualification", ("removed_at", admin.EmptyFieldListFilter), "project"]
    search_fields = ["user__username", "project__slug", "pseudonym"]
    list_select_related = ["user", "project"]
    autocomplete_fields = ["user", "project"]
