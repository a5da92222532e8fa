"""Crowd platforms: signed entry links, worker accounts, platform sessions.

Threat model of the entry links. Prolific and MTurk fill the worker's id into the link when the
worker clicks it, so a link cannot be signed per worker. What is signed (HMAC with the project's
``SECRET_KEY``, ``django.core.signing``) is the project, the platform and the study: nobody can
forge a link into another project or study, or change the study of a link. The ids the platform
appends (worker, session, HIT) are NOT verified: this module never calls the platforms' APIs, so
whoever holds a study's link can type any worker id into it. What limits the damage:

- Accounts. A worker account belongs to one platform, project, study and worker id
  (``worker_username``), has no password and can only be entered through a valid link. Claiming
  someone's worker id in one study never reaches their account in another study or project.
- Sessions. A platform session (Prolific ``SESSION_ID``, MTurk ``assignmentId``) belongs to the
  first worker id and study that used it; another worker id or study with it is refused (403).
- Prolific: one session per worker and study (Prolific's own rule), so a second session id for a
  worker id that already has one is refused (409). Someone who knows a participant's PROLIFIC_PID
  and enters the study before them takes that account; the participant is then refused.
- MTurk: a worker does many HITs of a study, each a new ``assignmentId``, so new sessions of an
  account must be allowed. Rules: one assignment per worker and HIT (MTurk's own rule: a second
  assignmentId for the same worker and ``hitId`` is refused, 409); no new session while another
  session of the account is in progress (a reserved, unexpired item, or entered within the batch
  time and not finished; 409). A new session closes the account's earlier ones and logs their
  browsers out (the account's session hash changes), and a crowd login reaches only the work of
  the account's open session (``crowd.selectors.in_current_session``: its own batch, and
  qualification rounds started since it began), never the answers of earlier sessions.

Remaining threat (MTurk, and Prolific for a participant who has not entered yet): since
``hitId``, ``assignmentId`` and ``workerId`` are whatever the link says, someone holding the HIT's
link and a worker's id can open a session of their own in that worker's account while the worker
is idle. They cannot read or change the worker's earlier answers, but their own answers count
for the account: bad answers on controls can get that account disqualified in this study, the
account's counts and the researcher's feedback are visible to them, and the worker's next HIT is
refused while the impostor's session is in progress. Forged assignment ids show in the payment
CSV; MTurk does not know them, so reconcile the CSV with MTurk's list of assignments
(``ListAssignmentsForHIT``) before paying, and treat a disqualification from a session MTurk does
not list as suspect (the quality page can reinstate the worker).
"""

from __future__ import annotations

import hashlib
import re
from datetime import timedelta
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from django.contrib.auth import get_user_model
from django.core import signing
from django.db import IntegrityError, transaction
from django.utils import timezone
from django.utils.translation import gettext, gettext_lazy

from annotation.models import Assignment, Batch
from core.errors import Refusal
from crowd.models import CrowdEntry
from projects.audit import AuditKind, audit_record
from projects.crowd import CrowdSettings, crowd_settings
from projects.models import Membership, Project

if TYPE_CHECKING:
    from django.contrib.auth.models import User

ENTRY_SALT = "concord.crowd.entry"
START_SALT = "concord.crowd.start"
START_TOKEN_MAX_AGE = 24 * 3600
ID_PATTERN = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
MTURK_PREVIEW_ID = "ASSIGNMENT_ID_NOT_AVAILABLE"
_CLOSED = gettext_lazy(
    "This session was closed because you opened another one in this study. Please continue "
    "there, or return this one on the platform."
)
Platform = CrowdEntry.Platform


class EntryRefused(Refusal):
    """An entry link that cannot be honoured; the page answers with the code's status."""


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
            gettext(
                "This study link is not valid. Please use the link exactly as the study gave it."
            ),
            code="forbidden",
        ) from None


def check_study(*, study: str) -> str:
    study = (study or "").strip()
    if not ID_PATTERN.match(study):
        raise EntryRefused(gettext("The study id must be 1–64 letters, digits, '-' or '_'."))
    return study


def entry_link(*, base_url: str, project: Project, platform: str, study: str) -> str:
    """The link a researcher gives the platform. Prolific fills the ``{{%…%}}`` placeholders; MTurk
    appends ``assignmentId``, ``hitId``, ``workerId`` and ``turkSubmitTo`` itself."""
    study = check_study(study=study)
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
        raise EntryRefused(
            gettext(
                "The link is missing a valid %(name)s. Please open the study from the platform "
                "again."
            )
            % {"name": name}
        )
    return value


USERNAME_MAX = 150


def worker_username(*, platform: str, project: Project, study_id: str, worker_id: str) -> str:
    """The account name of a worker id in one study of a project on one platform.

    ``platform-WORKER.PROJECT.STUDY``: ids never contain ``.``, so the parts cannot be shifted
    into one another, and names from before this scheme (``platform-WORKER``, no dot) can never
    be produced. Too long for Django's 150 characters, it becomes ``platform-DIGEST.PROJECT``
    (one dot), a SHA-256 of study and worker id. The worker id itself is stored on the session
    (``CrowdEntry.worker_id``) for the payment export."""
    name = f"{platform}-{worker_id}.{project.pk}.{study_id}"
    if len(name) <= USERNAME_MAX:
        return name
    digest = hashlib.sha256(f"{study_id}.{worker_id}".encode()).hexdigest()
    return f"{platform}-{digest}.{project.pk}"


def _worker_account(*, project: Project, platform: str, worker_id: str, study_id: str, crowd):
    User = get_user_model()
    username = worker_username(
        platform=platform, project=project, study_id=study_id, worker_id=worker_id
    )
    user, created = User.objects.get_or_create(username=username)
    if created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    elif user.has_usable_password():
        # A regular account with this name: never log it in from a link.
        raise EntryRefused(gettext("This worker id cannot be used here."), code="forbidden")
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
        raise EntryRefused(gettext("This worker id cannot be used here."), code="forbidden")
    return user


def _reenter(entry: CrowdEntry, *, worker_id: str, study_id: str) -> CrowdEntry:
    if entry.worker_id != worker_id or entry.study_id != study_id:
        raise EntryRefused(gettext("This session belongs to another worker."), code="forbidden")
    if entry.closed_at is not None:
        raise EntryRefused(str(_CLOSED), code="conflict")
    entry.save(update_fields=["last_seen_at"])
    return entry


def session_in_progress(*, project: Project, user: User, crowd: CrowdSettings) -> bool:
    """Whether the account is busy in one of its sessions: it holds a reserved, unexpired item
    (the one the workflow would hand back), or its open session was entered within the batch
    time and has no main batch yet (the worker is reading the instructions)."""
    now = timezone.now()
    if Assignment.objects.filter(
        project=project, annotator=user, state=Assignment.State.RESERVED, expires_at__gte=now
    ).exists():
        return True
    recent = now - timedelta(minutes=crowd.batch_minutes)
    for entry in CrowdEntry.objects.filter(
        project=project, user=user, closed_at__isnull=True, last_seen_at__gte=recent
    ):
        if not Batch.objects.filter(
            project=project, annotator=user, kind=Batch.Kind.MAIN, external_ref=entry.batch_ref
        ).exists():
            return True
    return False


@transaction.atomic
def worker_enter(
    *,
    project: Project,
    platform: str,
    worker_id: str,
    study_id: str,
    session_id: str,
    hit_id: str = "",
) -> CrowdEntry:
    """The platform session of a worker arriving through a verified link: creates the worker's
    account for this study (no password) and annotator membership on first arrival; returns the
    same entry when the same session comes back. Refuses (see the module docstring) a session
    used by another worker id or study, a closed session, on Prolific a second session of the
    account, and on MTurk a second assignment of the same HIT or a new session while another one
    is in progress. A new session closes the account's other sessions in the project and logs
    their browsers out."""
    _check_id(worker_id, "worker id")
    _check_id(session_id, "session id")
    if hit_id or platform == Platform.MTURK:
        _check_id(hit_id, "HIT id")
    crowd = crowd_settings(project)
    if project.status != Project.Status.ACTIVE or not crowd.batches:
        raise EntryRefused(gettext("This study is not open at the moment."), code="not_found")

    sessions = CrowdEntry.objects.select_related("user").filter(
        project=project, platform=platform, session_id=session_id
    )
    entry = sessions.first()
    if entry is not None:
        return _reenter(entry, worker_id=worker_id, study_id=study_id)
    user = _worker_account(
        project=project, platform=platform, worker_id=worker_id, study_id=study_id, crowd=crowd
    )
    # One session decision at a time per account: the checks below and the new session must not
    # interleave with another arrival of the same worker id.
    get_user_model().objects.select_for_update().filter(pk=user.pk).values_list("pk").first()
    entry = sessions.first()
    if entry is not None:  # the same session arrived twice at once
        return _reenter(entry, worker_id=worker_id, study_id=study_id)
    _check_new_session(
        project=project,
        platform=platform,
        worker_id=worker_id,
        study_id=study_id,
        hit_id=hit_id,
        user=user,
        crowd=crowd,
    )
    try:
        with transaction.atomic():
            entry = CrowdEntry.objects.create(
                project=project,
                user=user,
                platform=platform,
                worker_id=worker_id,
                study_id=study_id,
                session_id=session_id,
                hit_id=hit_id,
            )
            audit_record(
                project=project,
                actor=user,
                kind=AuditKind.CROWD_SESSION_OPENED,
                summary=f"{entry.get_platform_display()} worker {worker_id} opened a session "
                f"(study {study_id}).",
                changes={"platform": platform, "study_id": study_id, "worker_id": worker_id},
            )
    except IntegrityError:  # another account took the session id meanwhile
        entry = sessions.first()
        if entry is None:
            raise
        return _reenter(entry, worker_id=worker_id, study_id=study_id)
    _close_other_sessions(project=project, user=user, entry=entry)
    return entry


def _check_new_session(
    *, project: Project, platform: str, worker_id: str, study_id: str, hit_id: str, user, crowd
) -> None:
    """Refuse a second Prolific session of the account, and on MTurk a second assignment of the
    same HIT or a new session while another one is in progress."""
    same_worker = CrowdEntry.objects.filter(
        project=project, platform=platform, worker_id=worker_id, study_id=study_id
    )
    if platform == Platform.PROLIFIC and same_worker.exists():
        raise EntryRefused(
            gettext(
                "You already have a session in this study. Please continue it from the link Prolific "
                "gave you for that session."
            ),
            code="conflict",
        )
    if platform == Platform.MTURK:
        if same_worker.filter(hit_id=hit_id).exists():
            raise EntryRefused(
                gettext(
                    "You already have an assignment of this HIT. Please continue that one; if you "
                    "returned it and accepted the HIT again, contact the researcher."
                ),
                code="conflict",
            )
        if session_in_progress(project=project, user=user, crowd=crowd):
            raise EntryRefused(
                gettext(
                    "Another HIT of this study is in progress for your worker id. Please finish or "
                    "return it first, then open this one again."
                ),
                code="conflict",
            )


def _close_other_sessions(*, project: Project, user, entry: CrowdEntry) -> None:
    closed = (
        CrowdEntry.objects.filter(project=project, user=user, closed_at__isnull=True)
        .exclude(pk=entry.pk)
        .update(closed_at=timezone.now())
    )
    if closed:
        # A new unusable password changes the account's session hash: every browser still
        # logged in to an earlier session is logged out on its next request.
        user.set_unusable_password()
        user.save(update_fields=["password"])


def start_token(*, entry: CrowdEntry) -> str:
    """A short-lived signed token that opens the task in a top-level window (MTurk shows the HIT
    in an iframe, where the site's cookies are third-party and not sent)."""
    return signing.dumps(entry.pk, salt=START_SALT, compress=True)


def entry_from_token(*, token: str) -> CrowdEntry:
    try:
        pk = signing.loads(token, salt=START_SALT, max_age=START_TOKEN_MAX_AGE)
    except signing.SignatureExpired:
        raise EntryRefused(
            gettext("This link has expired. Please open the task from the HIT again."),
            code="forbidden",
        ) from None
    except signing.BadSignature:
        raise EntryRefused(gettext("This link is not valid."), code="forbidden") from None
    entry = CrowdEntry.objects.select_related("project", "user").filter(pk=pk).first()
    if entry is None:
        raise EntryRefused(gettext("This link is not valid."), code="forbidden")
    if entry.closed_at is not None:
        raise EntryRefused(str(_CLOSED), code="forbidden")
    return entry
