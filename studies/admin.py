import json

from django import forms
from django.contrib import admin
from django.core.serializers.json import DjangoJSONEncoder
from django.db import transaction
from django.db.models import Count, Q
from django.urls import reverse
from django.utils.html import format_html
from rest_framework.exceptions import ValidationError

from annotation import task_types
from annotation.models import Assignment
from core.wording import counted
from projects.admin import ProjectScopedAdmin
from projects.audit import settings_audit, settings_of
from projects.crowd import CrowdSettingsSerializer
from projects.models import Membership, Project
from projects.services import project_create, project_settings, settings_version_record
from studies.schema_forms import (
    SEP,
    schema_errors,
    schema_fields,
    schema_initial,
    schema_values,
)
from studies.study_files import config_json_schema, crowd_json_schema
from studies.study_forms import kept_values, newline_normalised

CONFIG, CROWD = "config", "crowd"


class ProjectForm(forms.ModelForm):
    """Task type chosen from the registry; the task configuration and the crowd settings edited
    field by field in forms generated from the study files' JSON Schema
    (``studies.schema_forms``) and checked by the same serializers, errors naming the path
    (``config.seed: …``). Use :func:`project_form_for` to get the form of one task type."""

    task_type = forms.ChoiceField(choices=task_types.choices)
    config_for = forms.CharField(widget=forms.HiddenInput, required=False)
    guidelines = forms.CharField(
        required=False, strip=False, widget=forms.Textarea, help_text="Markdown."
    )
    config_task_type = ""  # the task type whose config fields the form has

    class Meta:
        model = Project
        fields = [
            "slug",
            "name",
            "task_type",
            "status",
            "annotators_per_item",
            "guidelines",
            "created_by",
        ]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        slug = self.config_task_type
        self.initial["config_for"] = slug
        self._switched = False
        if self.instance.pk:
            if self.instance.task_type == slug:
                self.initial.update(
                    schema_initial(
                        config_json_schema(slug), prefix=CONFIG, values=self.instance.config or {}
                    )
                )
            self.initial.update(
                schema_initial(crowd_json_schema(), prefix=CROWD, values=self.instance.crowd or {})
            )
        if self.is_bound and self.data.get("config_for", slug) not in ("", slug):
            # The page showed another task type's configuration: show this one's defaults.
            data = self.data.copy()
            for name, field in self.fields.items():
                if not name.startswith(CONFIG + SEP):
                    continue
                data.pop(name, None)
                if isinstance(field, forms.BooleanField):
                    if field.initial:
                        data[name] = "on"
                elif isinstance(field, forms.JSONField):
                    data[name] = "" if field.initial is None else json.dumps(field.initial)
                elif field.initial is not None:
                    data[name] = field.initial
            data["config_for"] = slug
            self.data = data
            self._switched = True

    def full_clean(self):
        super().full_clean()
        # A field's own error (not a number, not a choice) names its path like the serializers'.
        for name in list(self._errors or {}):
            if name.startswith((CONFIG + SEP, CROWD + SEP)):
                path = self.fields[name].label
                self._errors[name] = self.error_class(
                    [
                        m if m.startswith((f"{path}:", f"{path}[", f"{path}.")) else f"{path}: {m}"
                        for m in self._errors[name]
                    ]
                )

    def clean_guidelines(self) -> str:
        return newline_normalised(self.cleaned_data.get("guidelines") or "")

    def clean_slug(self) -> str:
        """As study files have it: a new project's slug in lower case, and a slug that another
        project holds in any case refused, in words that say only that the address is taken."""
        slug = self.cleaned_data["slug"]
        if self.instance.pk is None:
            slug = slug.lower()
        if Project.objects.filter(slug__iexact=slug).exclude(pk=self.instance.pk).exists():
            raise forms.ValidationError(
                f"The address /p/{slug.lower()}/ is not available; choose another slug."
            )
        return slug

    def clean(self):
        cleaned = super().clean()
        slug = self.config_task_type
        if self._switched:
            raise forms.ValidationError(
                f"The task type is now {slug}: its configuration below shows its defaults; "
                "check it and save again."
            )
        if cleaned.get("task_type") == slug:
            config_schema = config_json_schema(slug)
            values = schema_values(config_schema, prefix=CONFIG, cleaned=cleaned)
            if (
                self._checked(
                    task_types.get(slug).config_serializer(data=values), CONFIG, config_schema
                )
                is not None
            ):
                # As a study file would hold it: the keys set, not the defaults the form showed.
                stored = self.instance.config if self.instance.task_type == slug else {}
                self._config = kept_values(config_schema, values, stored or {})
        crowd_schema = crowd_json_schema()
        values = schema_values(crowd_schema, prefix=CROWD, cleaned=cleaned)
        if self._checked(CrowdSettingsSerializer(data=values), CROWD, crowd_schema) is not None:
            self._crowd = kept_values(crowd_schema, values, self.instance.crowd or {})
        return cleaned

    def _checked(self, serializer, prefix: str, schema: dict) -> dict | None:
        """The serializer's validated data, or None with its errors on the form's fields."""
        try:
            valid = serializer.is_valid()
        except ValidationError as exc:  # unknown keys refused in to_internal_value
            detail = exc.detail
        else:
            if valid:
                return json.loads(json.dumps(serializer.validated_data, cls=DjangoJSONEncoder))
            detail = serializer.errors
        keys = set(schema.get("properties") or {})
        for field, message in schema_errors(detail, prefix=prefix, keys=keys):
            self.add_error(field if field in self.fields else None, message)
        return None

    def _post_clean(self):
        super()._post_clean()
        if getattr(self, "_config", None) is not None:
            self.instance.config = self._config
        if getattr(self, "_crowd", None) is not None:
            self.instance.crowd = self._crowd


def project_form_for(task_type: str) -> type[ProjectForm]:
    """:class:`ProjectForm` with the fields of ``task_type``'s configuration and of the crowd
    settings, generated from their JSON Schema."""
    fields = {
        **schema_fields(config_json_schema(task_type), prefix=CONFIG),
        **schema_fields(crowd_json_schema(), prefix=CROWD),
    }
    return type(
        f"ProjectForm_{task_type}", (ProjectForm,), {"config_task_type": task_type, **fields}
    )


def _task_type_of(request, obj) -> str:
    """The task type whose configuration the page edits: the one posted or asked for
    (``?task_type=``), else the project's, else the first registered."""
    known = [t.slug for t in task_types.all_task_types()]
    for candidate in (
        request.POST.get("task_type"),
        request.GET.get("task_type"),
        getattr(obj, "task_type", None),
    ):
        if candidate in known:
            return candidate
    return known[0]


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
    # Members are not an inline: a crowd study has hundreds, and every row was a set of widgets
    # (and queries) on this page; they are counted here and managed on their own pages.
    readonly_fields = ["members"]

    class Media:
        css = {"all": ["css/admin_project.css"]}

    def get_form(self, request, obj=None, change=False, **kwargs):
        kwargs["form"] = project_form_for(_task_type_of(request, obj))
        return super().get_form(request, obj, change=change, **kwargs)

    def get_fieldsets(self, request, obj=None):
        fields = self.get_fields(request, obj)
        config = [f for f in fields if f.startswith(CONFIG + SEP)]
        crowd = [f for f in fields if f.startswith(CROWD + SEP)]
        main = [f for f in fields if f not in config and f not in crowd]
        task_type = task_types.get(_task_type_of(request, obj))
        return [
            (None, {"fields": main}),
            (
                f"Task configuration ({task_type.name})",
                {
                    "fields": config,
                    "description": "The keys of the study file's config, checked as a study "
                    "file is. To configure another task type, choose it above and save: the "
                    "page then shows its settings.",
                },
            ),
            (
                "Crowd and quality settings",
                {"fields": crowd, "description": "The keys of the study file's crowd."},
            ),
        ]

    def get_readonly_fields(self, request, obj=None):
        # A choice of creator would list every account, other projects' crowd workers included.
        if request.user.is_superuser:
            return super().get_readonly_fields(request, obj)
        return [*super().get_readonly_fields(request, obj), "created_by"]

    def changelist_view(self, request, extra_context=None):
        request._project_counts = True  # the list's columns; not the change page's object
        return super().changelist_view(request, extra_context)

    def get_queryset(self, request):
        queryset = super().get_queryset(request)
        if not getattr(request, "_project_counts", False):
            return queryset  # one project's page counts no items
        # Counts in the list query itself: no query per row.
        return queryset.annotate(
            _items=Count("items", filter=Q(items__kind="regular"), distinct=True),
            _submitted=Count(
                "items__assignments",
                filter=Q(items__assignments__state=Assignment.State.SUBMITTED),
                distinct=True,
            ),
        )

    @admin.display(description="Members")
    def members(self, obj):
        if obj is None or obj.pk is None:
            return "Add members on the project's members page once it is saved."
        counts = dict(
            Membership.objects.filter(project=obj, removed_at__isnull=True)
            .values_list("role")
            .annotate(n=Count("id"))
            .order_by()
        )
        summary = ", ".join(counted(n, role) for role, n in sorted(counts.items())) or "none"
        return format_html(
            '{} · <a href="{}">members page</a> · <a href="{}?project__id__exact={}">'
            "memberships</a>",
            summary,
            reverse("project-members", args=[obj.slug]),
            reverse("admin:projects_membership_changelist"),
            obj.pk,
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
        if not change:
            # its creator joins as researcher, or (not being a superuser) could not open it
            project_create(
                project=obj,
                by=request.user,
                via="admin",
                creator_joins=not request.user.is_superuser,
            )
            return
        stored = Project.objects.get(pk=obj.pk)
        before = project_settings(project=stored)
        audited = settings_of(project=stored)
        with transaction.atomic():
            super().save_model(request, obj, form, change)
            settings_version_record(project=obj, before=before, by=request.user, via="admin")
            settings_audit(project=obj, actor=request.user, before=audited, via="admin")


@admin.register(Membership)
class MembershipAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    list_display = ["user", "project", "role", "qualification", "pseudonym", "removed_at"]
    list_filter = ["role", "qualification", ("removed_at", admin.EmptyFieldListFilter), "project"]
    search_fields = ["user__username", "project__slug", "pseudonym"]
    list_select_related = ["user", "project"]
    autocomplete_fields = ["user", "project"]
