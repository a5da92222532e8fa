"""Local stand-ins for the Prolific and MTurk requester APIs (threads with ``http.server`` on
127.0.0.1): they implement the documented endpoints Concord calls, check the credentials and the
bodies as the platforms document them, keep what was done (approvals, bonuses paid), and can be
told to answer the next matching request with an error or to do the work and never answer (a
timeout on Concord's side). Nothing here reaches the internet.

Prolific's bulk-bonus pay call pays again on every request, as Prolific documents; MTurk's
SendBonus pays a ``UniqueRequestToken`` once and refuses a repeat.
"""

from __future__ import annotations

import json
import re
import threading
import uuid
from dataclasses import dataclass, field
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from crowd import sigv4
from crowd.platforms import MTURK_REGION, MTURK_SERVICE, PROLIFIC_REJECTION_CATEGORIES

PROLIFIC_TOKEN = "test-prolific-token"
MTURK_KEY, MTURK_SECRET = "AKIDSTUB", "stub-secret-key"


@dataclass
class Fault:
    pattern: str  # a regex on "POST path" (Prolific) or the operation name (MTurk)
    status: int = 0  # 0: do the work, then hang until released (the caller times out)
    body: dict = field(default_factory=dict)


class Stub:
    """What the server saw and did, and the faults it is told to answer with."""

    def __init__(self) -> None:
        self.requests: list[tuple[str, dict]] = []  # (what, body) of every accepted request
        self.faults: list[Fault] = []
        self.release = threading.Event()
        self.lock = threading.Lock()
        self.url = ""

    def fail_next(self, pattern: str, status: int, body: dict | None = None) -> None:
        self.faults.append(Fault(pattern, status, body or {"detail": "stub error", "secret": "x"}))

    def hang_next(self, pattern: str) -> None:
        self.faults.append(Fault(pattern))

    def fault_for(self, what: str) -> Fault | None:
        with self.lock:
            for fault in self.faults:
                if re.search(fault.pattern, what):
                    self.faults.remove(fault)
                    return fault
        return None

    def calls(self, pattern: str) -> list[dict]:
        return [body for what, body in self.requests if re.search(pattern, what)]


class _Handler(BaseHTTPRequestHandler):
    stub: Stub

    def log_message(self, *args) -> None:  # quiet
        pass

    def _answer(self, status: int, data) -> None:
        body = json.dumps(data).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _body(self) -> bytes:
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def _respond(self, what: str, work) -> None:
        """Answer a fault, or do ``work`` (returns status, data) and answer it; a hanging fault
        does the work and waits until the test releases it."""
        fault = self.stub.fault_for(what)
        if fault is not None and fault.status:
            self._answer(fault.status, fault.body)
            return
        status, data = work()
        if fault is not None:
            self.stub.release.wait()
            return
        self._answer(status, data)


# --- Prolific ------------------------------------------------------------------------------------


class ProlificStub(Stub):
    def __init__(self) -> None:
        super().__init__()
        self.status: dict[str, str] = {}  # submission id -> APPROVED / REJECTED / RETURN REQUESTED
        self.participants: dict[str, set[str]] = {}  # study id -> participant ids
        self.bulk: dict[str, list[tuple[str, Decimal]]] = {}
        self.paid: list[tuple[str, Decimal]] = []  # (participant, amount), once per pay call


class ProlificHandler(_Handler):
    def do_POST(self) -> None:
        body = self._body()
        if self.headers.get("Authorization") != f"Token {PROLIFIC_TOKEN}":
            self._answer(401, {"detail": "Invalid token."})
            return
        try:
            data = json.loads(body or b"{}")
        except ValueError:
            self._answer(400, {"detail": "JSON parse error"})
            return
        path = self.path.removeprefix("/api/v1")
        routes = [
            (r"^/submissions/([^/]+)/transition/$", self._transition),
            (r"^/submissions/([^/]+)/request-return/$", self._request_return),
            (r"^/submissions/bonus-payments/$", self._bonus_setup),
            (r"^/bulk-bonus-payments/([^/]+)/pay/$", self._bonus_pay),
        ]
        for pattern, route in routes:
            match = re.match(pattern, path)
            if match:
                groups = match.groups()
                self._respond(f"POST {path}", lambda r=route, g=groups: r(data, *g))
                return
        self._answer(404, {"detail": "Not found."})

    def _accepted(self, what: str, data: dict) -> None:
        with self.stub.lock:
            self.stub.requests.append((what, data))

    def _transition(self, data: dict, submission: str):
        action = data.get("action")
        if action == "REJECT":
            if len(data.get("message") or "") < 100:
                return 400, {"error": {"message": ["At least 100 characters."]}}
            if data.get("rejection_category") not in PROLIFIC_REJECTION_CATEGORIES:
                return 400, {"error": {"rejection_category": ["Not a valid choice."]}}
        elif action != "APPROVE":
            return 400, {"error": {"action": ["Not a valid choice."]}}
        done = {"APPROVE": "APPROVED", "REJECT": "REJECTED"}[action]
        previous = self.stub.status.get(submission)
        if previous not in (None, done):
            return 400, {"error": {"detail": f"Submission is {previous}."}}
        self.stub.status[submission] = done  # the same request twice is ignored (idempotent)
        self._accepted(f"transition {submission} {action}", data)
        return 200, {"id": submission, "status": done}

    def _request_return(self, data: dict, submission: str):
        reasons = data.get("request_return_reasons")
        if (
            not isinstance(reasons, list)
            or not reasons
            or not all(isinstance(r, str) for r in reasons)
        ):
            return 400, {"error": {"request_return_reasons": ["A list of reasons is required."]}}
        self.stub.status[submission] = "RETURN REQUESTED"
        self._accepted(f"return {submission}", data)
        return 200, {"id": submission, "status": "AWAITING REVIEW", "participant": "?"}

    def _bonus_setup(self, data: dict):
        study, lines = data.get("study_id"), []
        known = self.stub.participants.get(study, set())
        for line in str(data.get("csv_bonuses") or "").splitlines():
            pid, _, amount = line.partition(",")
            if pid not in known:
                return 400, {"error": {"csv_bonuses": [f"Unknown participant {pid}."]}}
            lines.append((pid, Decimal(amount)))
        if not lines:
            return 400, {"error": {"csv_bonuses": ["No bonuses."]}}
        bulk_id = uuid.uuid4().hex[:24]
        self.stub.bulk[bulk_id] = lines
        self._accepted("bonus set-up", data)
        total = sum(a for _, a in lines)
        return 201, {"id": bulk_id, "study": study, "amount": float(total), "fees": 0, "vat": 0}

    def _bonus_pay(self, data: dict, bulk_id: str):
        if bulk_id not in self.stub.bulk:
            return 404, {"detail": "Not found."}
        with self.stub.lock:
            self.stub.paid.extend(self.stub.bulk[bulk_id])  # NOT idempotent: pays every time
        self._accepted(f"bonus pay {bulk_id}", data)
        return 200, f"Bulk bonus payment with ID {bulk_id} is being processed asynchronously."


# --- MTurk ---------------------------------------------------------------------------------------


class MTurkStub(Stub):
    def __init__(self) -> None:
        super().__init__()
        self.assignments: dict[str, str] = {}  # assignment id -> worker id (Submitted ones)
        self.status: dict[str, str] = {}  # assignment id -> Approved / Rejected
        self.tokens: dict[str, tuple[str, Decimal]] = {}  # UniqueRequestToken -> bonus paid
        self.bad_signatures = 0


_AUTH = re.compile(
    r"^AWS4-HMAC-SHA256 Credential=([^/]+)/(\d{8})/([^/]+)/([^/]+)/aws4_request, "
    r"SignedHeaders=([a-z0-9;-]+), Signature=([0-9a-f]{64})$"
)


class MTurkHandler(_Handler):
    def _signature_ok(self, body: bytes) -> bool:
        match = _AUTH.match(self.headers.get("Authorization") or "")
        if not match:
            return False
        key, date, region, service, signed, sig = match.groups()
        names = signed.split(";")
        if key != MTURK_KEY or (region, service) != (MTURK_REGION, MTURK_SERVICE):
            return False
        if not {"host", "x-amz-date", "x-amz-target"} <= set(names):
            return False
        headers = {n: self.headers.get(n, "") for n in names}
        amz_date = headers["x-amz-date"]
        if amz_date[:8] != date:
            return False
        _, expected = sigv4.signature(
            method="POST",
            path=self.path,
            query={},
            headers=headers,
            body=body,
            secret=MTURK_SECRET,
            region=region,
            service=service,
            amz_date=amz_date,
        )
        return expected == sig

    def do_POST(self) -> None:
        body = self._body()
        if not self._signature_ok(body):
            self.stub.bad_signatures += 1
            self._answer(403, {"__type": "InvalidSignatureException", "message": "Bad signature."})
            return
        target = self.headers.get("X-Amz-Target") or ""
        service, _, operation = target.partition(".")
        if (
            service != "MTurkRequesterServiceV20170117"
            or self.headers.get("Content-Type") != "application/x-amz-json-1.1"
        ):
            self._answer(400, {"__type": "UnknownOperationException"})
            return
        data = json.loads(body or b"{}")
        work = {
            "ApproveAssignment": self._approve,
            "RejectAssignment": self._reject,
            "SendBonus": self._bonus,
        }.get(operation)
        if work is None:
            self._answer(400, {"__type": "UnknownOperationException"})
            return
        self._respond(operation, lambda: work(data))

    def _error(self, message: str):
        return 400, {
            "__type": "com.amazonaws.mturk.requester#RequestError",
            "Message": message,
            "TurkErrorCode": "AWS.MechanicalTurk.Stub",
        }

    def _decide(self, data: dict, decision: str, operation: str):
        assignment = data.get("AssignmentId")
        if assignment not in self.stub.assignments:
            return self._error(f"Assignment {assignment} does not exist.")
        if assignment in self.stub.status:
            return self._error("This operation can be called with a status of: Submitted.")
        self.stub.status[assignment] = decision
        with self.stub.lock:
            self.stub.requests.append((operation, data))
        return 200, {}

    def _approve(self, data: dict):
        return self._decide(data, "Approved", "ApproveAssignment")

    def _reject(self, data: dict):
        if not data.get("RequesterFeedback"):
            return self._error("RequesterFeedback is required.")
        return self._decide(data, "Rejected", "RejectAssignment")

    def _bonus(self, data: dict):
        missing = [
            k for k in ("WorkerId", "BonusAmount", "AssignmentId", "Reason") if not data.get(k)
        ]
        if missing:
            return self._error(f"Missing {', '.join(missing)}.")
        if self.stub.assignments.get(data["AssignmentId"]) != data["WorkerId"]:
            return self._error("The worker did not do this assignment.")
        token = data.get("UniqueRequestToken") or uuid.uuid4().hex
        if token in self.stub.tokens:
            return self._error(f"The bonus with token {token} was already sent.")
        self.stub.tokens[token] = (data["WorkerId"], Decimal(data["BonusAmount"]))
        with self.stub.lock:
            self.stub.requests.append(("SendBonus", data))
        return 200, {}


def serve(stub: Stub, handler: type[_Handler]):
    """Start ``stub``'s server on a free port of 127.0.0.1; returns the server (shut it down)."""
    bound = type("BoundHandler", (handler,), {"stub": stub})
    server = ThreadingHTTPServer(("127.0.0.1", 0), bound)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    stub.url = f"http://127.0.0.1:{server.server_address[1]}"
    return server
