"""Which addresses the client-document fetch may connect to: public unicast only. Every special-purpose range is
refused, those Python's ``is_global`` calls global included (NAT64, IPv4-compatible and -translated IPv6, 6to4,
Teredo, multicast, documentation, benchmarking and anycast ranges), since an address that embeds an IPv4 one can
reach it through a translator on the relay's network."""

from __future__ import annotations

import pytest

from codap_relay.oauth.addresses import public_address

PUBLIC = ["93.184.216.34", "8.8.8.8", "1.1.1.1", "2606:2800:220:1:248:1893:25c8:1946", "2a00:1450:4001:81c::200e"]

REFUSED = [
    # the ranges that held before
    "127.0.0.1", "10.0.0.1", "172.16.5.4", "192.168.1.1", "169.254.169.254", "100.64.0.1", "0.0.0.0",
    "::1", "fe80::1%eth0", "fc00::1", "fd00::1", "::", "::ffff:127.0.0.1", "::ffff:10.0.0.1",
    # IPv4 special purpose
    "224.0.0.1", "239.1.1.1", "255.255.255.255", "240.0.0.1", "198.18.0.1", "192.0.0.8", "192.0.2.1",
    "198.51.100.1", "203.0.113.1", "192.31.196.1", "192.52.193.1", "192.88.99.1", "192.175.48.1",
    # NAT64 (well-known and local-use prefixes), IPv4-compatible, IPv4-translated: each embeds 10.0.0.1 or 8.8.8.8
    "64:ff9b::a00:1", "64:ff9b::808:808", "64:ff9b:1::a00:1", "::a00:1", "::808:808", "::ffff:0:a00:1",
    "::ffff:8.8.8.8",
    # 6to4 and Teredo, whatever they embed
    "2002:a00:1::1", "2002:808:808::1", "2001::1", "2001:0:4136:e378:8000:63bf:3fff:fdd2",
    # IPv6 multicast, site-local, discard, documentation, benchmarking, ORCHID, SRv6 SIDs, AS112
    "ff0e::1", "ff02::1", "fec0::1", "100::1", "2001:db8::1", "3fff::1", "2001:2::1", "2001:20::1",
    "5f00::1", "2001:4:112::1", "2620:4f:8000::1",
]  # fmt: skip


@pytest.mark.parametrize("address", PUBLIC)
def test_public_unicast_is_fetched(address: str) -> None:
    assert public_address(address, allow_loopback=False)


@pytest.mark.parametrize("address", REFUSED)
def test_every_special_purpose_address_is_refused(address: str) -> None:
    assert not public_address(address, allow_loopback=False)


def test_the_test_setting_lets_loopback_through_and_nothing_else() -> None:
    assert public_address("127.0.0.1", allow_loopback=True) and public_address("::1", allow_loopback=True)
    for address in ("10.0.0.1", "64:ff9b::7f00:1", "::ffff:0:7f00:1", "2002:7f00:1::1"):
        assert not public_address(address, allow_loopback=True), address
