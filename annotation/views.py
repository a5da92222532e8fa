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
from django.shortcuts import redirect, render
from django.utils import translation
from django.utils.translation import gettext as _
from django.views.decorators.http import require_GET, require_POST

from annotation import services, task_types
from annotation.crowd_session import crowd_context
from annotation.models import Item
from core.errors import Refusal
from core.middleware import LANGUAGE_SESSION_KEY, supported_language
from projects.crowd import crowd_settings
from projects.permissions import ANNOTATE_ROLES, RESEARCH_ROLES, membership_for, project_for


@login_required
@require_GET
def annotate(request, slug):
    project = project_for(request.user, slug, ANNOTATE_ROLES)
    task_type = task_types.get(project.task_type)
    config = task_type.validate_config(project.config)
    membership = membership_for(request.user, project)
    language = translation.get_language()
    saved = supported_language(membership.language) if membership else None
    if saved and not request.session.get(LANGUAGE_SESSION_KEY):
        # The member's setting, for this page and (through the session) its API calls.
        request.session[LANGUAGE_SESSION_KEY] = language = saved
    with translation.override(language):
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
                "membership": membership,
            },
        )


@login_required
@require_POST
def annotation_language(request, slug):
    """The language form of the annotation page: keeps the choice on the caller's membership
    (their setting, for every later visit) and in the session, then shows the page again.

    Security: annotator role in the project (404 otherwise); the language must be one of
    ``settings.LANGUAGES`` (400 otherwise)."""
    project = project_for(request.user, slug, ANNOTATE_ROLES)
    language = supported_language(request.POST.get("language", ""))
    membership = membership_for(request.user, project)
    if language is None or membership is None:
        raise Refusal(_("Choose one of the languages offered."), code="invalid", field="language")
    services.membership_language_set(membership=membership, language=language)
    request.session[LANGUAGE_SESSION_KEY] = language
    return redirect("annotate", slug=project.slug)


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
