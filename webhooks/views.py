"""The webhooks page of a project (researchers): subscriptions and the delivery log."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST

from core.errors import Refusal
from projects.permissions import RESEARCH_ROLES, project_for
from webhooks import events, selectors, services
from webhooks.models import Delivery


def _page(request, project, *, status: int = 200, form: dict | None = None):
    wanted = request.GET.get("status", "")
    if wanted not in Delivery.Status.values:
        wanted = ""
    return render(
        request,
        "webhooks/webhooks.html",
        {
            "project": project,
            "subscriptions": [
                selectors.subscription_view(subscription=s)
                for s in selectors.subscriptions_of(project=project)
            ],
            "deliveries": selectors.deliveries_of(project=project, status=wanted)[:100],
            "statuses": Delivery.Status.choices,
            "wanted": wanted,
            "events": events.EVENTS,
            "form": form or {},
        },
        status=status,
    )


@login_required
def webhooks_page(request, slug):
    """GET: the page. POST: add a webhook (url, events, description)."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    if request.method == "POST":
        form = {
            "url": request.POST.get("url", ""),
            "events": request.POST.getlist("events"),
            "description": request.POST.get("description", ""),
        }
        try:
            services.subscription_create(project=project, user=request.user, **form)
        except Refusal as refusal:
            messages.error(request, refusal.message)
            return _page(
                request, project, status=refusal.status, form={**form, "error": refusal.message}
            )
        messages.success(request, "Webhook added. Its secret signs every delivery.")
        return redirect("project-webhooks", slug=project.slug)
    return _page(request, project)


@login_required
@require_POST
def subscription_change(request, slug, subscription_id):
    """Pause, resume, replace the secret of, or delete a webhook (``action``)."""
    project = project_for(request.user, slug, RESEARCH_ROLES)
    subscription = selectors.subscription_of(project=project, subscription_id=subscription_id)
    if subscription is None:
        raise Refusal("No such webhook in this project.", code="not_found")
    action = request.POST.get("action", "")
    if action == "delete":
        services.subscription_delete(subscription=subscription)
        messages.success(request, "Webhook deleted, with its delivery log.")
    elif action in ("pause", "resume", "new_secret"):
        services.subscription_update(
            subscription=subscription,
            is_active=None if action == "new_secret" else action == "resume",
            new_secret=action == "new_secret",
        )
        messages.success(request, "Webhook changed.")
    else:
        raise Refusal("Unknown action.", field="action")
    return redirect("project-webhooks", slug=project.slug)


@login_required
@require_POST
def redeliver(request, slug, delivery_id):
    project = project_for(request.user, slug, RESEARCH_ROLES)
    delivery = selectors.delivery_of(project=project, delivery_id=delivery_id)
    if delivery is None:
        raise Refusal("No such delivery in this project.", code="not_found")
    try:
        services.delivery_redeliver(delivery=delivery)
    except Refusal as refusal:
        messages.error(request, refusal.message)
        return _page(request, project, status=refusal.status)
    messages.success(request, f"Delivery {delivery.pk} is being sent again.")
    return redirect("project-webhooks", slug=project.slug)
