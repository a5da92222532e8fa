"""Crowd platforms: signed entry links, worker accounts, platform sessions.

Threat model of the entry links. Prolific and MTurk fill the worker's id into the link when the
worker clicks it, so a link cannot be signed per worker. What is signed (HMAC with the project's
``SECRET_KEY``, ``django.core.signing``) is the project, the platform and the study: nobody can
forge a link into another project or study, or change the study of a link. Posing as another
worker is prevented by binding: a worker account is created from the platform id without a
password (it can only be entered through a valid link), a platform session (Prolific
``SESSION_ID``, MTurk ``assignmentId``) belongs to the first worker that used it, and on Prolific a
worker has one session per study, so a second session id for the same worker is refused.
"""

from __future__ import annotations

import re
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.core import signing
from django.db import IntegrityError, transaction

from crowd.models import CrowdEntry
from projects.crowd import crowd_settings
from projects.models import Membership, Project

ENTRY_SALT = "concord.crowd.entry"
START_SALT = "concord.crowd.start"
START_TOKEN_MAX_AGE = 24 * 3600
ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MTURK_PREVIEW_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
Platform = CrowdEntry.Platform


class EntryRefused(Exception):
    """An entry link that cannot be honoured; ``status`` is the HTTP status of the page."""

    def __init__(self, message: str, *, status: int = 400) -> None:
        super().__init__(message)
        self.message = message
        self.status = status


def _signed_value(project: Project, platform: str, study: str) -> str:
    return f"{project.slug}|{platform}|{study}"


def link_signature(*, project: Project, platform: str, study: str) -> str:
    return signing.Signer(salt=ENTRY_SALT).signature(_signed_value(project, platform, study))


def verify_link(*, project: Project, platform: str, study: str, signature: str) -> None:
    """Raise ``EntryRefused`` (403) unless ``signature`` signs this project, platform and study
    (with the current secret key or one of ``SECRET_KEY_FALLBACKS``)."""
    signer = signing.Signer(salt=ENTRY_SALT)
    try:
        signer.unsign(f"{_signed_value(project, platform, study)}{signer.sep}{signature}")
    except signing.BadSignature:
        raise EntryRefused(
            "This study link is not valid. Please use the link exactly as the study gave it.",
            status=403,
        ) from None


def check_study(study: str) -> str:
    study = (study or "").strip()
    if not ID_PATTERN.match(study):
        raise EntryRefused("The study id must be 1–64 letters, digits, '-' or '_'.")
    return study


def entry_link(*, base_url: str, project: Project, platform: str, study: str) -> str:
    """The link a researcher gives the platform. Prolific fills the ``{{%…%}}`` placeholders; MTurk
    appends ``assignmentId``, ``hitId``, ``workerId`` and ``turkSubmitTo`` itself."""
    study = check_study(study)
    sig = link_signature(project=project, platform=platform, study=study)
    path = f"{base_url.rstrip('/')}/crowd/{project.slug}/{platform}/"
    if platform == Platform.PROLIFIC:
        # The placeholders must stay literal (Prolific replaces them), so they are not encoded.
        return (
            f"{path}?{urlencode({'sig': sig})}&STUDY_ID={study}"
            "&PROLIFIC_PID={{%PROLIFIC_PID%}}&SESSION_ID={{%SESSION_ID%}}"
        )
    return f"{path}?{urlencode({'study': study, 'sig': sig})}"


def mturk_external_question(*, link: str, frame_height: int = 800) -> str:
    """The ExternalQuestion XML for MTurk's CreateHIT (the link must be served over HTTPS)."""
    from xml.sax.saxutils import escape

    return (
        '<ExternalQuestion xmlns="http://mechanicalturk.amazonaws.com/AWSMechanicalTurkDataSchemas/'
        '2006-07-14/ExternalQuestion.xsd">\n'
        f"  <ExternalURL>{escape(link)}</ExternalURL>\n"
        f"  <FrameHeight>{frame_height}</FrameHeight>\n"
        "</ExternalQuestion>"
    )


def _check_id(value: str, name: str) -> str:
    if not ID_PATTERN.match(value or ""):
        raise EntryRefused(f"The link is missing a valid {name}. Please open the study from the platform again.")
    return value


@transaction.atomic
def worker_enter(
    *, project: Project, platform: str, worker_id: str, study_id: str, session_id: str, hit_id: str = ""
) -> CrowdEntry:
    """The platform session of a worker arriving through a verified link: creates the worker
    account (no password) and annotator membership on first arrival; returns the same entry when
    the same session comes back. Refuses a session used by another worker and, on Prolific, a
    second session of the same worker in the same study."""
    _check_id(worker_id, "worker id")
    _check_id(session_id, "session id")
    if hit_id:
        _check_id(hit_id, "HIT id")
    crowd = crowd_settings(project)
    if project.status != Project.Status.ACTIVE or not crowd.batches:
        raise EntryRefused("This study is not open at the moment.", status=404)

    User = get_user_model()
    user, created = User.objects.get_or_create(username=f"{platform}-{worker_id}")
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    elif user.has_usable_password():
        # A regular account with this name: never log it in from a link.
        raise EntryRefused("This worker id cannot be used here.", status=403)
    membership, _ = Membership.objects.get_or_create(
        project=project,
        user=user,
        defaults={
            "role": Membership.Role.ANNOTATOR,
            "qualification": Membership.Qualification.PENDING
            if crowd.qualification_required
            else Membership.Qualification.NOT_REQUIRED,
        },
    )
    if membership.role != Membership.Role.ANNOTATOR:
        raise EntryRefused("This worker id cannot be used here.", status=403)

    entry = CrowdEntry.objects.filter(project=project, platform=platform, session_id=session_id).first()
    if entry is not None:
        if entry.user_id != user.id:
            raise EntryRefused("This session belongs to another worker.", status=403)
        entry.save(update_fields=["last_seen_at"])
        return entry
    if platform == Platform.PROLIFIC and (
        CrowdEntry.objects.filter(
            project=project, platform=platform, worker_id=worker_id, study_id=study_id
        ).exists()
    ):
        raise EntryRefused(
            "You already have a session in this study. Please continue it from the link Prolific "
            "gave you for that session.",
            status=409,
        )
    try:
        with transaction.atomic():
            return CrowdEntry.objects.create(
                project=project,
                user=user,
                platform=platform,
                worker_id=worker_id,
                study_id=study_id,
                session_id=session_id,
                hit_id=hit_id,
            )
    except IntegrityError:  # the same session arrived twice at once
        entry = CrowdEntry.objects.get(project=project, platform=platform, session_id=session_id)
        if entry.user_id != user.id:
            raise EntryRefused("This session belongs to another worker.", status=403) from None
        return entry


def start_token(entry: CrowdEntry) -> str:
    """A short-lived signed token that opens the task in a top-level window (MTurk shows the HIT
    in an iframe, where the site's cookies are third-party and not sent)."""
    return signing.dumps(entry.pk, salt=START_SALT, compress=True)


def entry_from_token(token: str) -> CrowdEntry:
    try:
        pk = signing.loads(token, salt=START_SALT, max_age=START_TOKEN_MAX_AGE)
    except signing.SignatureExpired:
        raise EntryRefused("This link has expired. Please open the task from the HIT again.", status=403) from None
    except signing.BadSignature:
        raise EntryRefused("This link is not valid.", status=403) from None
    entry = CrowdEntry.objects.select_related("project", "user").filter(pk=pk).first()
    if entry is None:
        raise EntryRefused("This link is not valid.", status=403)
    return entry
