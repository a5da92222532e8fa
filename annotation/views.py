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
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotation import task_types
from annotation.crowd_session import crowd_context
from projects.crowd import crowd_settings
from projects.permissions import ANNOTATE_ROLES, membership_for, project_for


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
