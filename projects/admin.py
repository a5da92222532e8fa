"""The admin, scoped per project: one mixin that every admin of project data uses.

A staff member who is not a superuser sees, chooses and changes only what belongs to the projects
they are a researcher of (``projects.selectors.researched_projects``); superusers see everything.
The mixin limits

- every changelist, change, delete and history view (``get_queryset``: another project's object
  does not exist, exactly like a missing one, so ids do not leak),
- every action (Django runs actions on the changelist's queryset),
- every foreign-key choice, plain, raw-id or autocomplete, pointing at another scoped model
  (``formfield_for_foreignkey``; autocomplete searches the related admin's scoped queryset),
- list filters on relations (only values present in the scoped rows are offered),

and refuses to save an object whose project is not the user's (``save_model``), behind the form
that already refuses such a choice. Django's model permissions still decide which models a staff
member may view or change at all.

Each admin names the path from its model to the project in ``project_path`` ("project",
"item__project", …; "" for ``Project`` itself).
"""

from __future__ import annotations

from django.contrib import admin
from django.contrib.admin.exceptions import NotRegistered
from django.contrib.admin.utils import get_fields_from_path
from django.core.exceptions import FieldDoesNotExist, PermissionDenied
from django.db.models import QuerySet

from projects.audit import admin_audit
from projects.selectors import researched_projects


def scoped(queryset: QuerySet, *, path: str, user) -> QuerySet:
    """``queryset`` limited to rows of the projects ``user`` is a researcher of."""
    if user.is_superuser:
        return queryset
    lookup = f"{path}__in" if path else "pk__in"
    return queryset.filter(**{lookup: researched_projects(user=user).values("pk")})


def _project_id(obj, path: str):
    if not path:
        return obj.pk
    *through, last = path.split("__")
    for name in through:
        obj = getattr(obj, name, None)
        if obj is None:
            return None
    return getattr(obj, f"{last}_id", None)


def _changed(form) -> dict[str, dict[str, str]]:
    """The fields a model form changed, each with its value before and after (as text)."""
    return {
        name: {
            "before": str(form.initial.get(name, ""))[:200],
            "after": str(form.cleaned_data.get(name, ""))[:200],
        }
        for name in form.changed_data
    }


class ProjectScopedAdmin:
    """Mixin for ``ModelAdmin`` and inline classes of project data (see the module docstring)."""

    project_path: str = "project"

    def get_queryset(self, request):
        return scoped(super().get_queryset(request), path=self.project_path, user=request.user)

    def formfield_for_foreignkey(self, db_field, request, **kwargs):
        path = self._scope_of(db_field.remote_field.model)
        if path is not None and "queryset" not in kwargs:
            queryset = self.get_field_queryset(kwargs.get("using"), db_field, request)
            if queryset is None:
                queryset = db_field.remote_field.model._default_manager.using(kwargs.get("using"))
            kwargs["queryset"] = scoped(queryset.all(), path=path, user=request.user)
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def get_list_filter(self, request):
        return [self._only_present(spec) for spec in super().get_list_filter(request)]

    def save_model(self, request, obj, form, change):
        if self.project_path and not request.user.is_superuser:
            project_id = _project_id(obj, self.project_path)
            if not researched_projects(user=request.user).filter(pk=project_id).exists():
                raise PermissionDenied("Not a project you are a researcher of.")
        super().save_model(request, obj, form, change)
        if self.project_path:  # the Project's own admin writes its settings entry itself
            self._audit(request, obj, "changed" if change else "added", _changed(form))

    def delete_model(self, request, obj):
        project_id = _project_id(obj, self.project_path) if self.project_path else None
        pk = obj.pk
        super().delete_model(request, obj)
        obj.pk = pk  # Django clears it on delete; the entry names what was deleted
        admin_audit(project_id=project_id, actor=request.user, verb="deleted", obj=obj)

    def delete_queryset(self, request, queryset):
        doomed = [(o, _project_id(o, self.project_path), o.pk) for o in queryset]
        super().delete_queryset(request, queryset)
        for obj, project_id, pk in doomed if self.project_path else ():
            obj.pk = pk
            admin_audit(project_id=project_id, actor=request.user, verb="deleted", obj=obj)

    def save_formset(self, request, form, formset, change):
        """Inline rows (a project's members…): one entry per row added, changed or deleted; the
        rows belong to the parent object's project."""
        super().save_formset(request, form, formset, change)
        project_id = _project_id(form.instance, self.project_path)
        rows = [
            *((obj, "added", {}) for obj in formset.new_objects),
            *((obj, "changed", dict.fromkeys(names, "")) for obj, names in formset.changed_objects),
            *((obj, "deleted", {}) for obj in formset.deleted_objects),
        ]
        for obj, verb, fields in rows:
            admin_audit(
                project_id=project_id, actor=request.user, verb=verb, obj=obj, fields=fields
            )

    def _audit(self, request, obj, verb: str, fields: dict) -> None:
        admin_audit(
            project_id=_project_id(obj, self.project_path),
            actor=request.user,
            verb=verb,
            obj=obj,
            fields=fields,
        )

    def _scope_of(self, model) -> str | None:
        """The project path of ``model`` if its admin is scoped too, else None (users, judges)."""
        try:
            related = self.admin_site.get_model_admin(model)
        except NotRegistered:
            return None
        return related.project_path if isinstance(related, ProjectScopedAdmin) else None

    def _only_present(self, spec):
        """A filter on a relation offers only the values present in the (scoped) rows, never
        the names of other projects."""
        if not isinstance(spec, str):
            return spec
        try:
            field = get_fields_from_path(self.model, spec)[-1]
        except (FieldDoesNotExist, NotRegistered):
            return spec
        if getattr(field, "is_relation", False):
            return (spec, admin.RelatedOnlyFieldListFilter)
        return spec
