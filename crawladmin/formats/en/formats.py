"""The one time format of every page (crawlcore/templatetags/times.py), for what Django formats itself:
the admin's lists and forms show "2026-11-28 22:27:44 UTC" as the dashboard does, not "Nov. 28, 2026,
10:28 p.m."."""

from __future__ import annotations

DATETIME_FORMAT = "Y-m-d H:i:s T"
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s T"
DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
