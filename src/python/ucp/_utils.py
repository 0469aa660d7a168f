# Copyright (C) uccl contributors. See file LICENSE for terms.
"""Helpers: message tags and interface addresses."""

import fcntl
import hashlib
import os
import socket
import struct

TAG_BITS = 64
TAG_MASK = (1 << TAG_BITS) - 1

_SIOCGIFADDR = 0x8915          # linux/sockios.h
_IFNAMSIZ = 16                 # linux/if.h


def _mix64(x):
    """splitmix64's finalizer: spreads every input bit over the output."""
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & TAG_MASK
    x = (x ^ (x >> 27)) * 0x94D049BB133111EB & TAG_MASK
    return x ^ (x >> 31)


def _stable_hash(tag):
    """A user tag as 64 bits, the same in every process (str and bytes are
    hashed with BLAKE2b: Python's hash() of them differs per process)."""
    if isinstance(tag, bool) or not isinstance(tag, (int, str, bytes)):
        return hash(tag) & TAG_MASK
    if isinstance(tag, int):
        return tag & TAG_MASK
    data = tag.encode() if isinstance(tag, str) else tag
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(),
                          "little")


def message_tag(base, tag, force_tag):
    """The UCP tag of a message: the endpoint's own tag (tag None), the
    user's tag as is (force_tag), or the user's tag mixed into the
    endpoint's (so it stays private to the endpoint)."""
    if tag is None:
        return base
    if force_tag:
        if isinstance(tag, bool) or not isinstance(tag, int):
            raise TypeError("force_tag needs an int tag, not %s"
                            % type(tag).__name__)
        if not 0 <= tag <= TAG_MASK:
            raise ValueError("tag %d is not in 0..2**64-1" % tag)
        return tag
    return _mix64(base ^ _mix64(_stable_hash(tag)))


def _ifaddr(ifname):
    """IPv4 address of one interface (OSError if it has none)."""
    name = ifname.encode()[:_IFNAMSIZ - 1]
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        req = struct.pack("256s", name)
        res = fcntl.ioctl(s.fileno(), _SIOCGIFADDR, req)
    return socket.inet_ntoa(res[20:24])


def get_address(ifname=None):
    """IPv4 address of a network interface.

    ifname: the interface; None: $UCXPY_IFNAME, else the first interface
    (other than loopback) that has an IPv4 address, else loopback's.
    Raises OSError if the named interface does not exist or has no IPv4
    address.
    """
    if ifname is None:
        ifname = os.environ.get("UCXPY_IFNAME")
    if ifname is not None:
        if not isinstance(ifname, str):
            raise TypeError("ifname must be a str, not %s"
                            % type(ifname).__name__)
        return _ifaddr(ifname)
    for _, name in socket.if_nameindex():
        if name == "lo":
            continue
        try:
            return _ifaddr(name)
        except OSError:
            continue
    return _ifaddr("lo")
