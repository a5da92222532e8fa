"""Where the server may call out to: the addresses an outbound URL's host resolves to.

Two kinds of outbound calls take an address someone chose: a judge's model endpoint (staff's,
``llm_judges.backends.llm``) and a project's webhook (a researcher's, ``webhooks``).
Neither may reach loopback, private, link-local (cloud metadata at 169.254.169.254), shared,
multicast, reserved or unspecified addresses unless staff allowed it (an endpoint's "allow
private network"; for webhooks, the hosts listed in ``CONCORD_WEBHOOK_PRIVATE_HOSTS``). The check
runs twice: before a call, so a refused host fails at once with a clear message, and when the
HTTP client opens each connection, on the very address it connects to, so a name that resolves
elsewhere between the two (DNS rebinding) is refused too.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Collection
from urllib.parse import urlparse

import httpcore

# Part of an endpoint refusal's message (the LLM backend recognises a refusal at connection time
# by it); the default remedy of every refusal here.
REFUSED = "only staff can allow an endpoint to reach such addresses"
DEFAULT_REMEDY = f"{REFUSED} (the endpoint's 'allow private network')."


class DestinationRefused(Exception):
    """The host resolves to an address this caller may not reach."""


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


def resolved_addresses(host: str, port: int, *, subject: str = "The endpoint's host") -> list[str]:
    """Every address ``host`` resolves to (an IP literal resolves to itself)."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise DestinationRefused(f"{subject} {host!r} does not resolve ({exc}).") from None
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def may_reach_private(host: str, *, allow_private: bool, private_hosts: Collection[str]) -> bool:
    """Whether ``host`` may resolve to private addresses: every host when ``allow_private``,
    else only the hosts staff listed (compared case-insensitively, without a trailing dot)."""
    if allow_private:
        return True
    name = host.lower().rstrip(".").strip("[]")
    return any(name == listed.lower().rstrip(".").strip("[]") for listed in private_hosts)


def checked_address(
    host: str,
    port: int,
    *,
    allow_private: bool,
    private_hosts: Collection[str] = (),
    subject: str = "The endpoint's host",
    remedy: str = DEFAULT_REMEDY,
) -> str:
    """An address of ``host`` the caller may reach (the first one), or ``DestinationRefused``
    when any address it resolves to is refused (a name must not mix public and private)."""
    addresses = resolved_addresses(host, port, subject=subject)
    if not may_reach_private(host, allow_private=allow_private, private_hosts=private_hosts):
        for address in addresses:
            why = address_refusal(address)
            if why:
                raise DestinationRefused(f"{subject} {host} resolves to {address}, {why}; {remedy}")
    if not addresses:
        raise DestinationRefused(f"{subject} {host!r} resolves to no address.")
    return addresses[0]


def url_check(
    url: str,
    *,
    allow_private: bool,
    private_hosts: Collection[str] = (),
    subject: str = "The endpoint's host",
    remedy: str = DEFAULT_REMEDY,
) -> None:
    """Refuse (``DestinationRefused``) a URL whose host the caller may not reach."""
    parsed = urlparse(url)
    try:
        port = parsed.port
    except ValueError:
        raise DestinationRefused(f"{url!r} has an invalid port.") from None
    if parsed.scheme not in ("http", "https") or not parsed.hostname:
        raise DestinationRefused(f"{url!r} is not an http(s) URL.")
    port = port or (443 if parsed.scheme == "https" else 80)
    checked_address(
        parsed.hostname,
        port,
        allow_private=allow_private,
        private_hosts=private_hosts,
        subject=subject,
        remedy=remedy,
    )


class CheckedNetworkBackend(httpcore.SyncBackend):
    """httpcore's socket backend, connecting only to addresses the caller may reach: the host
    is resolved here and the connection made to the checked address (TLS still verifies the
    host name, which httpcore passes separately)."""

    def __init__(
        self,
        *,
        allow_private: bool,
        private_hosts: Collection[str] = (),
        subject: str = "The endpoint's host",
        remedy: str = DEFAULT_REMEDY,
    ) -> None:
        self.allow_private = allow_private
        self.private_hosts = tuple(private_hosts)
        self.subject = subject
        self.remedy = remedy

    def connect_tcp(self, host, port, timeout=None, local_address=None, socket_options=None):
        try:
            address = checked_address(
                host,
                port,
                allow_private=self.allow_private,
                private_hosts=self.private_hosts,
                subject=self.subject,
                remedy=self.remedy,
            )
        except DestinationRefused as exc:
            raise httpcore.ConnectError(str(exc)) from None
        return super().connect_tcp(
            address,
            port,
            timeout=timeout,
            local_address=local_address,
            socket_options=socket_options,
        )


def checked_http_client(
    *,
    allow_private: bool,
    timeout: float,
    private_hosts: Collection[str] = (),
    subject: str = "The endpoint's host",
    remedy: str = DEFAULT_REMEDY,
):
    """An ``httpx.Client`` whose connections go only where the caller may reach. Proxies from
    the environment are not used: a proxy would connect on our behalf, past the check."""
    import httpx

    transport = httpx.HTTPTransport()
    transport._pool._network_backend = CheckedNetworkBackend(
        allow_private=allow_private, private_hosts=private_hosts, subject=subject, remedy=remedy
    )
    return httpx.Client(transport=transport, timeout=timeout, trust_env=False)
