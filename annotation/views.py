"""The annotation page.

Security: login required; the project must be one where the caller is an annotator
(``project_for`` → 404 otherwise). The page itself carries no item data: the task's JS module
fetches the caller's own assignments from the annotator API, which never returns gold. The task
config on the page omits the task type's private keys (``TaskType.private_config``). Besides
the task, the page shows only the caller's own membership data (the researcher's feedback to
them) and, in a crowd session, the platform's way back; nothing on it depends on whether the item
shown is a control.
"""

from django.contrib.auth.decorators import login_required
from django.http import Http404
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation import task_types
from annotation.crowd_session import crowd_context
from annotation.models import Item
from projects.crowd import crowd_settings
from projects.permissions import ANNOTATE_ROLES, RESEARCH_ROLES, membership_for, project_for


@login_required
@require_GET
def annotate(request, slug):
    project = project_for(request.user, slug, ANNOTATE_ROLES)
    task_type = task_types.get(project.task_type)
    config = task_type.validate_config(project.config)
    return render(
        request,
        task_type.template_name,
        {
            "project": project,
            "task_type": task_type,
            "task_config": task_type.annotator_config(config),
            "reopen": request.GET.get("assignment", ""),
            "crowd": crowd_settings(project),
            "crowd_session": crowd_context(request, project),
            "membership": membership_for(request.user, project),
        },
    )


@login_required
@require_GET
def annotate_preview(request, slug):
    """The annotation page as annotators see it, for the project's researchers: the first item
    (or ``?item=<id>`` of this project), the same template and task module, and nothing stored
    (no assignment, no draft, no answer; the page says so).

    Security: researcher role in the project (404 otherwise); the item must belong to it."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    task_type = task_types.get(project.task_type)
    config = task_type.validate_config(project.config)
    items = Item.objects.filter(project=project, kind=Item.Kind.REGULAR).order_by("position", "id")
    if request.GET.get("item", "").isdecimal():
        items = items.filter(pk=int(request.GET["item"]))
    item = items.first()
    if item is None:
        raise Http404("This project has no item to preview yet: import items first.")
    following = items.filter(position__gt=item.position).values_list("pk", flat=True).first()
    return render(
        request,
        task_type.template_name,
        {
            "project": project,
            "task_type": task_type,
            "task_config": task_type.annotator_config(config),
            "crowd": crowd_settings(project),
            "preview": {
                "item": task_type.display(item),
                "position": f"Preview of item {item.external_id}",
                "next": f"?item={following}" if following else "",
            },
        },
    )
