"""Which addresses the relay may connect to on a stranger's say-so (a client's metadata document): public unicast
only.

``ipaddress``'s properties first (private, loopback, link-local, multicast, reserved, unspecified, site-local, and
not global), then an explicit list, for what those properties call global: ranges that embed an IPv4 address
(NAT64, IPv4-compatible and IPv4-translated IPv6, 6to4, Teredo), which a translator on the relay's own network
could turn into a private one, and the special-purpose blocks of IANA's registries (documentation, benchmarking,
anycast services, AS112) that no client's web server lives in. IPv6 must be global unicast (2000::/3) besides.
An IPv4-mapped IPv6 address is refused whatever it maps: no real host is published under one.

An IPv6-only network with DNS64 would need NAT64 addresses for every IPv4-only host; the relay does not fetch
through one (such hosts are refused).
"""

from __future__ import annotations

import ipaddress

IPv4 = ipaddress.IPv4Network
IPv6 = ipaddress.IPv6Network

SPECIAL_V4 = tuple(
    IPv4(n)
    for n in (
        "0.0.0.0/8",
        "100.64.0.0/10",  # shared address space (carrier-grade NAT)
        "192.0.0.0/24",  # IETF protocol assignments (is_global lets .9 and .10 through)
        "192.0.2.0/24",
        "198.51.100.0/24",
        "203.0.113.0/24",  # documentation
        "192.31.196.0/24",
        "192.175.48.0/24",  # AS112
        "192.52.193.0/24",  # AMT
        "192.88.99.0/24",  # 6to4 relay anycast
        "198.18.0.0/15",  # benchmarking
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved, and the limited broadcast
    )
)
SPECIAL_V6 = tuple(
    IPv6(n)
    for n in (
        "::/96",  # IPv4-compatible (::a.b.c.d), and :: and ::1
        "::ffff:0:0/96",  # IPv4-mapped
        "::ffff:0:0:0/96",  # IPv4-translated (SIIT)
        "64:ff9b::/96",  # NAT64, well-known prefix
        "64:ff9b:1::/48",  # NAT64, local use
        "100::/64",  # discard-only
        "2001::/23",  # IETF protocol assignments: Teredo (2001::/32), benchmarking, ORCHID, AS112-v6 ...
        "2001:db8::/32",  # documentation
        "2002::/16",  # 6to4
        "2620:4f:8000::/48",  # AS112 direct delegation
        "3fff::/20",  # documentation
        "5f00::/16",  # SRv6 SIDs
        "fc00::/7",  # unique local
        "fe80::/10",  # link-local
        "fec0::/10",  # site-local
        "ff00::/8",  # multicast
    )
)
GLOBAL_UNICAST_V6 = IPv6("2000::/3")


def public_address(address: str, *, allow_loopback: bool) -> bool:
    """Whether ``address`` (as getaddrinfo gives it, an IPv6 zone allowed) is a public unicast address.
    ``allow_loopback`` lets 127.0.0.0/8 and ::1 through too (tests only)."""
    ip = ipaddress.ip_address(address.split("%", 1)[0])
    if allow_loopback and ip.is_loopback:
        return True
    flags = (ip.is_private, ip.is_loopback, ip.is_link_local, ip.is_multicast, ip.is_reserved, ip.is_unspecified)
    if any(flags) or not ip.is_global:
        return False
    if isinstance(ip, ipaddress.IPv4Address):
        return not any(ip in net for net in SPECIAL_V4)
    if ip.ipv4_mapped is not None or ip.sixtofour is not None or ip.teredo is not None or ip.is_site_local:
        return False
    return ip in GLOBAL_UNICAST_V6 and not any(ip in net for net in SPECIAL_V6)
