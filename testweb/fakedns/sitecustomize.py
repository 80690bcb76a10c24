"""A name resolver for a crawl run as a subprocess (testweb.unattended): put this folder on PYTHONPATH and
Python imports it at start. No internet, and the system's resolver cannot be pointed at a silent DNS server
without root (nor should a test change the machine's), so socket.getaddrinfo is wrapped:

  FAKEDNS_HANG    a suffix: names ending in it never answer (each lookup sleeps FAKEDNS_HANG_SECONDS, 120 by
                  default, then fails as a resolver that gave up)
  FAKEDNS_MAP     "name=ip,name=ip": these names resolve at once to these (loopback) addresses

Every other name goes to the real resolver.
"""

from __future__ import annotations

import os
import socket
import time

_real = socket.getaddrinfo
_hang = os.environ.get("FAKEDNS_HANG", "")
_hang_for = float(os.environ.get("FAKEDNS_HANG_SECONDS", "120"))
_map = dict(pair.split("=", 1) for pair in os.environ.get("FAKEDNS_MAP", "").split(",") if "=" in pair)


def _getaddrinfo(host, port, *args, **kwargs):
    name = host.decode() if isinstance(host, bytes) else (host or "")
    if _hang and name.endswith(_hang):
        time.sleep(_hang_for)
        raise socket.gaierror(socket.EAI_AGAIN, "Temporary failure in name resolution")
    if name in _map:
        return _real(_map[name], port, *args, **kwargs)
    return _real(host, port, *args, **kwargs)


if _hang or _map:
    socket.getaddrinfo = _getaddrinfo
