"""Where a judge's calls may go: the addresses a model endpoint's host resolves to.

Staff approve model endpoints (``llm_judges.ModelEndpoint``); a worker calls nothing else. On
top of that, an endpoint may not reach loopback, private, link-local (cloud metadata at
169.254.169.254), shared, multicast, reserved or unspecified addresses unless its record says so
(``allow_private_network``: staff's decision, for a vLLM on the same network). The check runs
twice: before each call, so a refused host fails the run at once with a clear message, and when
the HTTP client opens each connection, on the very address it connects to, so a name that
resolves elsewhere between the two (DNS rebinding) is refused too.
"""

from __future__ import annotations

import ipaddress
import socket
from urllib.parse import urlparse

import httpcore

from llm_judges.backends.errors import ConfigError

# Part of every refusal's message (the LLM backend recognises a refusal at connection time by it).
REFUSED = "only staff can allow an endpoint to reach such addresses"


class DestinationRefused(ConfigError):
    """The endpoint's host resolves to an address this endpoint may not reach."""


def address_refusal(address: str) -> str:
    """Why ``address`` (an IP literal) is not a public address ("" when it is)."""
    ip = ipaddress.ip_address(address.split("%")[0])
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    for test, what in (
        (ip.is_loopback, "a loopback address"),
        (ip.is_link_local, "a link-local address"),
        (ip.is_private, "a private address"),
        (ip.is_multicast, "a multicast address"),
        (ip.is_reserved, "a reserved address"),
        (ip.is_unspecified, "the unspecified address"),
        (not ip.is_global, "not a public address"),
    ):
        if test:
            return what
    return ""


def resolved_addresses(host: str, port: int) -> list[str]:
    """Every address ``host`` resolves to (an IP literal resolves to itself)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise DestinationRefused(
            f"The endpoint's host {host!r} does not resolve ({exc})."
        ) from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def checked_address(host: str, port: int, *, allow_private: bool) -> str:
    """An address of ``host`` this endpoint may reach (the first one), or ``DestinationRefused``
    when any address it resolves to is refused (a name must not mix public and private)."""
    addresses = resolved_addresses(host, port)
    if not allow_private:
        for address in addresses:
            why = address_refusal(address)
            if why:
                raise DestinationRefused(
                    f"The endpoint's host {host} resolves to {address}, {why}; {REFUSED} "
                    "(the endpoint's 'allow private network')."
                )
    if not addresses:
        raise DestinationRefused(f"The endpoint's host {host!r} resolves to no address.")
    return addresses[0]


def url_check(url: str, *, allow_private: bool) -> None:
    """Refuse (``DestinationRefused``) a URL whose host this endpoint may not reach."""
    parsed = urlparse(url)
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise DestinationRefused(f"{url!r} is not an http(s) URL.")
    port = parsed.port or (443 if parsed.scheme == "https" else 80)
    checked_address(parsed.hostname, port, allow_private=allow_private)


class CheckedNetworkBackend(httpcore.SyncBackend):
    """httpcore's socket backend, connecting only to addresses the endpoint may reach: the host
    is resolved here and the connection made to the checked address (TLS still verifies the
    host name, which httpcore passes separately)."""

    def __init__(self, *, allow_private: bool) -> None:
        self.allow_private = allow_private

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        try:
            address = checked_address(host, port, allow_private=self.allow_private)
        except DestinationRefused as exc:
            raise httpcore.ConnectError(str(exc)) from None
        return super().connect_tcp(
            address,
            port,
            timeout=timeout,
            local_address=local_address,
            socket_options=socket_options,
        )


def checked_http_client(*, allow_private: bool, timeout: float):
    """An ``httpx.Client`` whose connections go only where the endpoint may reach. Proxies from
    the environment are not used: a proxy would connect on our behalf, past the check."""
    import httpx

    transport = httpx.HTTPTransport()
    transport._pool._network_backend = CheckedNetworkBackend(allow_private=allow_private)
    return httpx.Client(transport=transport, timeout=timeout, trust_env=False)
