"""HTTP clients for the two crowd platforms' requester APIs: what Concord sends, and how an answer
is read into sent / failed / unknown.

Prolific (API v1, ``Authorization: Token <key>``; docs.prolific.com, API reference):
- approve or reject a submission: ``POST submissions/{id}/transition/`` with
  ``{"action": "APPROVE"}`` or ``{"action": "REJECT", "message": …, "rejection_category": …}``
  (the message at least 100 characters; documented as idempotent);
- ask for a return: ``POST submissions/{id}/request-return/`` ``{"request_return_reasons": […]}``;
- bonuses: ``POST submissions/bonus-payments/`` ``{"study_id", "csv_bonuses": "pid,amount\\n…"}``
  sets up a bulk payment and answers its ``id``; ``POST bulk-bonus-payments/{id}/pay/`` pays it.
  The pay call is documented as NOT idempotent: each request pays again.

MTurk (``MTurkRequesterServiceV20170117``, JSON 1.1 over HTTPS, SigV4-signed with service
``mturk-requester`` in ``us-east-1``): ``ApproveAssignment`` {AssignmentId, RequesterFeedback},
``RejectAssignment`` {AssignmentId, RequesterFeedback (required)}, ``SendBonus`` {WorkerId,
BonusAmount, AssignmentId, Reason, UniqueRequestToken}: the token makes a retried bonus safe.

How an answer is read: 2xx sent; 429 and other 4xx failed (the platform refused; nothing done);
a refused connection failed (nothing left); a timeout, a 5xx or a connection lost after the
request went out unknown (it may have been done). The platforms' error bodies are logged for
staff, never shown to researchers: the ledger keeps the status and a short message of ours.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import UTC, datetime
from urllib.parse import urlsplit

import httpx
from django.conf import settings

from core.errors import Refusal
from crowd import sigv4

log = logging.getLogger(__name__)

SENT, FAILED, UNKNOWN = "sent", "failed", "unknown"
PROLIFIC_REJECTION_CATEGORIES = (
    "TOO_QUICKLY",
    "TOO_SLOWLY",
    "FAILED_INSTRUCTIONS",
    "INCOMP_LONGITUDINAL",
    "FAILED_CHECK",
    "LOW_EFFORT",
    "MALINGERING",
    "NO_CODE",
    "BAD_CODE",
    "NO_DATA",
    "UNSUPP_DEVICE",
    "OTHER",
)
MTURK_TARGET = "MTurkRequesterServiceV20170117"
MTURK_SERVICE, MTURK_REGION = "mturk-requester", "us-east-1"
LOGGED_BODY = 500


class PlatformUnavailable(Refusal):
    """The platform's keys are not configured on this server (staff set them)."""

    default_code = "unavailable"


@dataclass(frozen=True)
class Answer:
    state: str  # sent | failed | unknown
    status: int | None
    outcome: str  # short and ours: safe to show researchers
    data: dict = field(default_factory=dict)


def _read(platform: str, what: str, response: httpx.Response) -> Answer:
    status = response.status_code
    try:
        data = response.json()
    except ValueError:
        data = {}
    if not isinstance(data, dict):
        data = {"value": data}
    if 200 <= status < 300:
        return Answer(SENT, status, f"{platform} accepted it ({status}).", data)
    log.warning(
        "%s %s answered %s: %s", platform, what, status, response.text[:LOGGED_BODY]
    )  # the body is for staff only
    if status == 429:
        return Answer(FAILED, status, f"{platform} asked to slow down (429); send it again later.")
    if status >= 500:
        return Answer(
            UNKNOWN, status, f"{platform} had an error ({status}); it may or may not be done."
        )
    return Answer(FAILED, status, f"{platform} refused it ({status}); see the server log.")


def _post(platform: str, what: str, url: str, *, headers: dict, body: bytes) -> Answer:
    timeout = float(settings.CONCORD_CROWD_ACTION_TIMEOUT)
    try:
        response = httpx.post(url, headers=headers, content=body, timeout=timeout)
    except httpx.ConnectError as exc:  # nothing reached the platform
        log.warning("%s %s: no connection: %s", platform, what, exc)
        return Answer(FAILED, None, f"Could not connect to {platform}; nothing was sent.")
    except httpx.TimeoutException:
        return Answer(
            UNKNOWN, None, f"No answer from {platform} within {timeout:g} s; it may be done."
        )
    except httpx.HTTPError as exc:
        log.warning("%s %s: %s", platform, what, exc)
        return Answer(UNKNOWN, None, f"The connection to {platform} broke; it may be done.")
    return _read(platform, what, response)


def check_configured(platform: str) -> None:
    """Refuse (503) unless the platform's keys are set on this server."""
    if platform == "prolific":
        _prolific_token()
    else:
        _mturk_keys()


# --- Prolific ------------------------------------------------------------------------------------


def _prolific_token() -> str:
    token = settings.CONCORD_PROLIFIC_TOKEN
    if not token:
        raise PlatformUnavailable(
            "No Prolific API token is configured on this server (CONCORD_PROLIFIC_TOKEN)."
        )
    return token


def prolific_url(path: str) -> str:
    return settings.CONCORD_PROLIFIC_API_URL.rstrip("/") + "/" + path.lstrip("/")


def prolific_post(path: str, payload: dict, *, what: str) -> Answer:
    headers = {"Authorization": f"Token {_prolific_token()}", "Content-Type": "application/json"}
    body = json.dumps(payload).encode()
    return _post("Prolific", what, prolific_url(path), headers=headers, body=body)


def prolific_request(kind: str, *, session_id: str, reason_code: str = "", message: str = ""):
    """(path, payload) of an approve, reject or return request for one submission."""
    if kind == "approve":
        return f"submissions/{session_id}/transition/", {"action": "APPROVE"}
    if kind == "reject":
        return f"submissions/{session_id}/transition/", {
            "action": "REJECT",
            "message": message,
            "rejection_category": reason_code,
        }
    reasons = [line.strip() for line in message.splitlines() if line.strip()]
    return f"submissions/{session_id}/request-return/", {"request_return_reasons": reasons}


def prolific_bonus_setup_request(*, study_id: str, lines: list[tuple[str, str]]):
    csv_bonuses = "\n".join(f"{pid},{amount}" for pid, amount in lines)
    return "submissions/bonus-payments/", {"study_id": study_id, "csv_bonuses": csv_bonuses}


# --- MTurk ---------------------------------------------------------------------------------------


def mturk_endpoint(*, sandbox: bool) -> str:
    return settings.CONCORD_MTURK_SANDBOX_ENDPOINT if sandbox else settings.CONCORD_MTURK_ENDPOINT


def _mturk_keys() -> tuple[str, str]:
    key, secret = settings.CONCORD_MTURK_ACCESS_KEY_ID, settings.CONCORD_MTURK_SECRET_ACCESS_KEY
    if not key or not secret:
        raise PlatformUnavailable(
            "No MTurk keys are configured on this server (CONCORD_MTURK_ACCESS_KEY_ID and "
            "CONCORD_MTURK_SECRET_ACCESS_KEY)."
        )
    return key, secret


def mturk_request(
    kind: str,
    *,
    session_id: str,
    worker_id: str,
    message: str,
    amount: str = "",
    token: str = "",
):
    """(operation, payload) of an approve, reject or bonus on one assignment."""
    if kind == "approve":
        payload = {"AssignmentId": session_id}
        if message:
            payload["RequesterFeedback"] = message
        return "ApproveAssignment", payload
    if kind == "reject":
        return "RejectAssignment", {"AssignmentId": session_id, "RequesterFeedback": message}
    return "SendBonus", {
        "WorkerId": worker_id,
        "BonusAmount": amount,
        "AssignmentId": session_id,
        "Reason": message,
        "UniqueRequestToken": token,
    }


def mturk_post(operation: str, payload: dict, *, sandbox: bool, now: datetime | None = None):
    key, secret = _mturk_keys()
    url = mturk_endpoint(sandbox=sandbox)
    parts = urlsplit(url)
    body = json.dumps(payload).encode()
    amz_date = (now or datetime.now(UTC)).strftime("%Y%m%dT%H%M%SZ")
    signed = {
        "host": parts.netloc,
        "x-amz-date": amz_date,
        "x-amz-target": f"{MTURK_TARGET}.{operation}",
        "content-type": "application/x-amz-json-1.1",
    }
    auth = sigv4.authorization(
        access_key=key,
        method="POST",
        path=parts.path or "/",
        query={},
        headers=signed,
        body=body,
        secret=secret,
        region=MTURK_REGION,
        service=MTURK_SERVICE,
        amz_date=amz_date,
    )
    headers = {**signed, "authorization": auth}
    return _post("MTurk", operation, url, headers=headers, body=body)
