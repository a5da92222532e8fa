"""AWS Signature Version 4 for the MTurk requester API (no boto3 here).

Follows AWS's "Create a signed AWS API request" (canonical request, string to sign, derived
signing key, ``Authorization`` header); ``tests/crowd/test_platform_actions.py`` checks it against
AWS's published test-suite vectors ("get-vanilla", "get-vanilla-query-order-key-case", with
``AKIDEXAMPLE`` on 2015-08-30T12:36:00Z). The local MTurk stub verifies requests with the same
function, so a request whose signature does not match is refused there as AWS would.
"""

from __future__ import annotations

import hashlib
import hmac
from urllib.parse import quote

ALGORITHM = "AWS4-HMAC-SHA256"


def _hmac(key: bytes, text: str) -> bytes:
    return hmac.new(key, text.encode(), hashlib.sha256).digest()


def signing_key(*, secret: str, date: str, region: str, service: str) -> bytes:
    key = _hmac(f"AWS4{secret}".encode(), date)
    key = _hmac(key, region)
    key = _hmac(key, service)
    return _hmac(key, "aws4_request")


def canonical_query(query: dict[str, str]) -> str:
    pairs = sorted((quote(k, safe="-_.~"), quote(v, safe="-_.~")) for k, v in query.items())
    return "&".join(f"{k}={v}" for k, v in pairs)


def signature(
    *,
    method: str,
    path: str,
    query: dict[str, str],
    headers: dict[str, str],
    body: bytes,
    secret: str,
    region: str,
    service: str,
    amz_date: str,
) -> tuple[str, str]:
    """(signed header names, hex signature) of a request; ``headers`` are the ones to sign
    (``host`` and ``x-amz-date`` among them)."""
    lowered = {k.lower(): " ".join(str(v).split()) for k, v in headers.items()}
    names = sorted(lowered)
    signed = ";".join(names)
    canonical = "\n".join(
        [
            method,
            quote(path or "/", safe="/-_.~"),
            canonical_query(query),
            "".join(f"{n}:{lowered[n]}\n" for n in names),
            signed,
            hashlib.sha256(body).hexdigest(),
        ]
    )
    date = amz_date[:8]
    scope = f"{date}/{region}/{service}/aws4_request"
    to_sign = "\n".join(
        [ALGORITHM, amz_date, scope, hashlib.sha256(canonical.encode()).hexdigest()]
    )
    key = signing_key(secret=secret, date=date, region=region, service=service)
    return signed, hmac.new(key, to_sign.encode(), hashlib.sha256).hexdigest()


def authorization(
    *,
    access_key: str,
    method: str,
    path: str,
    query: dict[str, str],
    headers: dict[str, str],
    body: bytes,
    secret: str,
    region: str,
    service: str,
    amz_date: str,
) -> str:
    """The ``Authorization`` header value of a request signed with ``access_key``/``secret``."""
    signed, sig = signature(
        method=method,
        path=path,
        query=query,
        headers=headers,
        body=body,
        secret=secret,
        region=region,
        service=service,
        amz_date=amz_date,
    )
    scope = f"{amz_date[:8]}/{region}/{service}/aws4_request"
    return f"{ALGORITHM} Credential={access_key}/{scope}, SignedHeaders={signed}, Signature={sig}"
