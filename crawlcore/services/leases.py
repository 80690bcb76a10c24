"""Who holds a lease and until when: the two values every claim (URLs, servers, monitors) writes."""

from __future__ import annotations

import os
import socket
import threading
from datetime import datetime, timedelta

from django.conf import settings
from django.utils import timezone

_HOST = socket.gethostname()


def worker_identity() -> str:
    """Who holds a lease: host, process and thread, so a lease outlives neither its thread nor its process."""
    return f"{_HOST}:{os.getpid()}:{threading.get_ident()}"


def lease_deadline(now: datetime | None = None) -> datetime:
    return (now or timezone.now()) + timedelta(seconds=settings.CRAWL_LEASE_SECONDS)
