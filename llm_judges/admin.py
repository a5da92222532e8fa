"""Admin for model endpoints (superusers only), judges (configuration, scoped to the projects a
staff member researches), prompt templates (edit, preview), runs (watch, cancel), results and
calls (read-only).

A model endpoint is the only address a worker calls for LLM judges: its URL, the environment
variable holding its key, the projects that may use it, and whether it may reach private
addresses. Only superusers see or change endpoints; researchers choose among those open to
their projects.

A judge's kind, model, parameters and prompt version become read-only once it has runs:
results are keyed by judge and prompt version only, so changing what produced them would mix
two judges under one name. Create a new judge instead. Its prompt template can change: results
are keyed by the template's version, so a new template's results never mix with the old's.

A prompt template that a run used is never changed: saving an edit makes the next version of
its name (and the judges that used it move to that version); the old runs keep their record and
fingerprint.
"""

from django import forms
from django.contrib import admin, messages
from django.http import Http404
from django.shortcuts import render
from django.urls import path, reverse
from django.utils.html import format_html
from rest_framework import serializers

from annotation.models import Item
from core.wording import indefinite
from llm_judges import prompts, selectors, services
from llm_judges.models import (
    Judge,
    JudgeCall,
    JudgeResult,
    JudgeRun,
    ModelEndpoint,
    Preselection,
    PreselectionShown,
    PromptTemplate,
)
from llm_judges.parameters import clean_model, clean_parameters
from llm_judges.services.prompt_templates import (
    clean_template,
    prompt_template_revise,
    prompt_template_save,
)
from projects.admin import ProjectScopedAdmin, scoped
from projects.selectors import researched_projects

FROZEN = ["kind", "model", "parameters", "prompt_version"]


class JudgeForm(forms.ModelForm):
    class Meta:
        model = Judge
        fields = [
            "project",
            "name",
            "kind",
            "model",
            "endpoint",
            "parameters",
            "prompt",
            "prompt_version",
            "description",
        ]

    def clean(self):
        cleaned = super().clean()
        kind = cleaned.get("kind") or (self.instance.kind if self.instance.pk else None)
        if not kind:
            return cleaned
        endpoint = cleaned.get("endpoint")
        if endpoint is not None:
            project = cleaned.get("project") or getattr(self.instance, "project", None)
            try:
                services.endpoint_check(endpoint=endpoint, kind=kind, project=project)
            except services.JudgeError as exc:
                self.add_error("endpoint", exc.message)
        if "parameters" in self.fields:
            try:
                cleaned["parameters"] = clean_parameters(kind, cleaned.get("parameters"))
            except serializers.ValidationError as exc:
                self.add_error(
                    "parameters", f"Invalid parameters for {indefinite(kind)} judge: {exc.detail}"
                )
        if "model" in self.fields:
            try:
                cleaned["model"] = clean_model(kind, cleaned.get("model", ""))
            except serializers.ValidationError as exc:
                self.add_error("model", str(exc.detail.get("model", exc.detail)))
        if cleaned.get("prompt") is not None and kind != Judge.Kind.LLM:
            self.add_error("prompt", "Prompt templates are for LLM judges.")
        return cleaned


def _task_type_choices() -> list[tuple[str, str]]:
    return [(p.task_type, p.task_type) for p in prompts.all_prompts()]


class PromptTemplateForm(forms.ModelForm):
    """Checks the template as every save path does (``clean_template``): a placeholder the task
    type does not provide is an error on its field, naming it and the ones it provides."""

    task_type = forms.ChoiceField(choices=_task_type_choices)

    class Meta:
        model = PromptTemplate
        fields = [
            "name",
            "task_type",
            "system",
            "template",
            "variants",
            "output_schema",
            "parameters",
            "note",
        ]

    def clean(self):
        cleaned = super().clean()
        task_type = cleaned.get("task_type") or self.instance.task_type
        if not task_type or "template" not in cleaned:
            return cleaned
        try:
            cleaned.update(
                clean_template(
                    task_type=task_type,
                    template=cleaned.get("template", ""),
                    system=cleaned.get("system") or "",
                    variants=cleaned.get("variants") or {},
                    output_schema=cleaned.get("output_schema"),
                    parameters=cleaned.get("parameters") or {},
                )
            )
        except services.JudgeError as exc:
            field = (exc.field or "template").split(".")[0]
            self.add_error(field if field in self.fields else None, exc.message)
        return cleaned

    def _post_clean(self):
        # The content is checked above; a used record is saved as a new version by the admin,
        # so the instance is not validated (or saved) as an edit of the used one.
        pass


class PreviewForm(forms.Form):
    item = forms.CharField(label="Item id", help_text="The item's external id.")
    project = forms.CharField(required=False, help_text="Project slug (when ids repeat).")
    presentation = forms.ChoiceField(required=False, choices=[("", "as annotators see it")])

    def __init__(self, *args, template: PromptTemplate, **kwargs):
        super().__init__(*args, **kwargs)
        try:
            extra = prompts.get(template.task_type).presentations
        except prompts.PromptNotFound:
            extra = ()
        self.fields["presentation"].choices += [(p, p) for p in extra]


@admin.register(PromptTemplate)
class PromptTemplateAdmin(admin.ModelAdmin):
    """Prompts as data. Saving an edit of a record a run used makes the next version.

    Prompt templates are one catalogue for every project (a study file names one by name and
    version, and a record no run has used is edited in place), so only superusers add, change or
    delete them; other staff with the model's permissions read them and preview them on their
    projects' items (found by the outside probe: a staff researcher could rewrite a record that
    another project's judge uses)."""

    form = PromptTemplateForm
    list_display = ["name", "version", "task_type", "builtin", "short_fingerprint", "created_at"]
    list_filter = ["task_type"]
    search_fields = ["name", "template", "note"]
    readonly_fields = ["version", "builtin", "fingerprint", "created_at", "preview_link"]

    def get_readonly_fields(self, request, obj=None):
        fields = list(self.readonly_fields)
        if obj is not None:
            fields += ["name", "task_type"]
        return fields

    def has_add_permission(self, request):
        return request.user.is_active and request.user.is_superuser

    def has_change_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    has_delete_permission = has_change_permission

    @admin.display(description="Fingerprint")
    def short_fingerprint(self, obj):
        return obj.fingerprint[:12]

    @admin.display(description="Preview")
    def preview_link(self, obj):
        if obj is None or obj.pk is None:
            return "–"
        url = reverse("admin:llm_judges_prompttemplate_preview", args=[obj.pk])
        return format_html('<a href="{}">Render for an item</a>', url)

    def save_model(self, request, obj, form, change):
        content = {name: form.cleaned_data.get(name) for name in PromptTemplate.CONTENT}
        content["note"] = form.cleaned_data.get("note", "")
        try:
            if change:
                stored = PromptTemplate.objects.get(pk=obj.pk)
                content["task_type"] = stored.task_type
                # a superuser's edit (the only writer): every project's judges move with it
                saved, what = prompt_template_revise(template=stored, changes=content)
            else:
                saved, what = prompt_template_save(name=form.cleaned_data["name"], **content)
        except services.JudgeError as exc:  # form.clean checked the same: a race
            raise forms.ValidationError(exc.message) from None
        obj.__dict__.update({k: v for k, v in saved.__dict__.items() if not k.startswith("_")})
        obj._state.adding = False
        if what == "new version":
            messages.warning(
                request,
                f"{saved.name} v{saved.version - 1 if change else saved.version} was used by a "
                f"run, so the edit was saved as version {saved.version}; earlier runs keep "
                "their version and fingerprint.",
            )

    def get_urls(self):
        own = [
            path(
                "<int:pk>/preview/",
                self.admin_site.admin_view(self.preview_view),
                name="llm_judges_prompttemplate_preview",
            )
        ]
        return own + super().get_urls()

    def preview_view(self, request, pk):
        """The template rendered for one item (of a project the user may see)."""
        template = PromptTemplate.objects.filter(pk=pk).first()
        if template is None or not self.has_view_permission(request, template):
            raise Http404("No such prompt.")
        form = PreviewForm(request.GET or None, template=template)
        preview = None
        if form.is_valid():
            items = scoped(
                Item.objects.filter(
                    external_id=form.cleaned_data["item"],
                    project__task_type=template.task_type,
                ).select_related("project"),
                path="project",
                user=request.user,
            )
            if form.cleaned_data["project"]:
                items = items.filter(project__slug=form.cleaned_data["project"])
            item = items.order_by("-id").first()
            if item is None:
                form.add_error("item", f"No {template.task_type} item with this id.")
            else:
                preview = selectors.prompt_preview(
                    template=template,
                    item=item,
                    presentation=form.cleaned_data["presentation"],
                )
                preview["item"] = item
        return render(
            request,
            "admin/llm_judges/prompttemplate/preview.html",
            {
                **self.admin_site.each_context(request),
                "opts": self.model._meta,
                "title": f"Preview {template}",
                "template_record": template,
                "form": form,
                "preview": preview,
            },
        )


class ModelEndpointForm(forms.ModelForm):
    class Meta:
        model = ModelEndpoint
        fields = [
            "name",
            "base_url",
            "api_key_env",
            "all_projects",
            "projects",
            "allow_private_network",
            "description",
        ]


@admin.register(ModelEndpoint)
class ModelEndpointAdmin(admin.ModelAdmin):
    """Staff's model servers: superusers only (a staff researcher sees none)."""

    form = ModelEndpointForm
    list_display = ["name", "base_url", "api_key_env", "all_projects", "allow_private_network"]
    search_fields = ["name", "base_url"]
    filter_horizontal = ["projects"]

    def has_module_permission(self, request):
        return request.user.is_active and request.user.is_superuser

    def has_view_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    has_add_permission = has_module_permission

    def has_change_permission(self, request, obj=None):
        return request.user.is_active and request.user.is_superuser

    has_delete_permission = has_change_permission


@admin.register(Judge)
class JudgeAdmin(ProjectScopedAdmin, admin.ModelAdmin):
    """A project's judges (scoped to the projects a staff member researches); judges without a
    project are the catalogue, which only superusers see and change."""

    form = JudgeForm
    list_display = ["name", "project", "kind", "model", "endpoint", "prompt_version", "updated_at"]
    list_filter = ["kind"]
    list_select_related = ["prompt", "project", "endpoint"]
    search_fields = ["name", "model", "project__slug"]

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        if db_field.name == "endpoint" and not request.user.is_superuser:
            from django.db.models import Q

            kwargs["queryset"] = ModelEndpoint.objects.filter(
                Q(all_projects=True) | Q(projects__in=researched_projects(user=request.user))
            ).distinct()
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_readonly_fields(self, request, obj=None):
        if obj is not None and obj.runs.exists():
            return [*FROZEN, "project", "endpoint"]
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
        cancelled = sum(services.judge_run_cancel(run=run, by=request.user) for run in queryset)
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
