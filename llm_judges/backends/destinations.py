"""Where a judge's calls may go: the addresses a model endpoint's host resolves to.

Staff approve model endpoints (``llm_judges.ModelEndpoint``); a worker calls nothing else. On
top of that, an endpoint may not reach loopback, private, link-local (cloud metadata at
169.254.169.254), shared, multicast, reserved or unspecified addresses unless its record says so
(``allow_private_network``: staff's decision, for a vLLM on the same network). The checks
themselves are generic and live in ``core.destinations`` (webhooks use them too): here they
raise the judges' ``ConfigError``, so a refused endpoint fails its run with the message.
"""

from __future__ import annotations

import socket  # noqa: F401  (tests patch destinations.socket.getaddrinfo)

from core import destinations as _checks
from core.destinations import REFUSED, CheckedNetworkBackend, address_refusal
from llm_judges.backends.errors import ConfigError

__all__ = [
    "REFUSED",
    "CheckedNetworkBackend",
    "DestinationRefused",
    "address_refusal",
    "checked_address",
    "checked_http_client",
    "resolved_addresses",
    "url_check",
]


class DestinationRefused(ConfigError, _checks.DestinationRefused):
    """The endpoint's host resolves to an address this endpoint may not reach."""


def resolved_addresses(host: str, port: int) -> list[str]:
    try:
        return _checks.resolved_addresses(host, port)
    except _checks.DestinationRefused as exc:
        raise DestinationRefused(str(exc)) from None


def checked_address(host: str, port: int, *, allow_private: bool) -> str:
    try:
        return _checks.checked_address(host, port, allow_private=allow_private)
    except _checks.DestinationRefused as exc:
        raise DestinationRefused(str(exc)) from None


def url_check(url: str, *, allow_private: bool) -> None:
    """Refuse (``DestinationRefused``, a ``ConfigError``) a URL whose host this endpoint may
    not reach."""
    try:
        _checks.url_check(url, allow_private=allow_private)
    except _checks.DestinationRefused as exc:
        raise DestinationRefused(str(exc)) from None


def checked_http_client(*, allow_private: bool, timeout: float):
    """An ``httpx.Client`` whose connections go only where the endpoint may reach."""
    return _checks.checked_http_client(allow_private=allow_private, timeout=timeout)
