"""The crowd session a browser is in, kept in the (server-side) Django session.

A crowd entry link logs the worker in and records here which platform session they came from,
so the annotation API can tie their batch to it (``batch_ref``) and the page can show the
platform's way back (Prolific's completion URL, or MTurk's "submit the HIT")."""

from __future__ import annotations

SESSION_KEY = "concord.crowd"


def crowd_context(request, project) -> dict | None:
    """{"platform", "ref", "entry"} for this project, or None outside crowd sessions."""
    return request.session.get(SESSION_KEY, {}).get(str(project.id))


def batch_ref(request, project) -> str:
    context = crowd_context(request, project)
    return context["ref"] if context else ""


def set_crowd_context(request, project, *, platform: str, ref: str, entry_id: int) -> None:
    contexts = dict(request.session.get(SESSION_KEY, {}))
    contexts[str(project.id)] = {"platform": platform, "ref": ref, "entry": entry_id}
    request.session[SESSION_KEY] = contexts


def crowd_worker(request) -> dict:
    """Template context: ``crowd_worker`` is true in a browser that came in through a crowd entry
    link, so every page (not only the annotation page) hides internal account names and the API."""
    session = getattr(request, "session", None)
    return {"crowd_worker": bool(session is not None and session.get(SESSION_KEY))}
