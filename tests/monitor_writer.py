"""A check writer for the concurrency test, run as a separate process: `python -m tests.monitor_writer
write|claim <start-at-epoch> <rounds>` with DATABASE_URL set. Prints what it did as JSON."""

from __future__ import annotations

import json
import os
import sys
import time
from datetime import timedelta

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crawladmin.settings")

import django  # noqa: E402

django.setup()

from django.utils import timezone  # noqa: E402

from crawler.http import FailureKind, FetchResult, Timings  # noqa: E402
from monitoring.accepted_codes import AcceptedCodes  # noqa: E402
from monitoring.models import ServerMonitor  # noqa: E402
from monitoring.services.checks import Checked, Target, checks_record, monitors_claim  # noqa: E402

FAIL_AFTER = 100


def disconnect(server_id: int) -> Checked:
    result = FetchResult(
        "http://x/",
        "GET",
        None,
        {},
        b"",
        FailureKind.REFUSED,
        "refused",
        False,
        0,
        Timings(0.1, None, None, None, 1.0),
        None,
    )
    target = Target(server_id, "http://x/", True, 300.0, 3.0, AcceptedCodes(), FAIL_AFTER, 1)
    return Checked(target, result, timezone.now(), "disconnect")


def main() -> None:
    mode, start, rounds = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
    ids = list(ServerMonitor.objects.order_by("server_id").values_list("server_id", flat=True))
    time.sleep(max(0.0, start - time.time()))  # all writers begin together
    if mode == "write":
        for _ in range(rounds):
            checks_record(checked=[disconnect(i) for i in ids])
        print(json.dumps({"written": rounds * len(ids)}))
    else:
        claimed = []
        for r in range(rounds):
            # Everyone claims the same due servers at (nearly) the same moment, round after round.
            at = start + 0.3 * (r + 1)
            time.sleep(max(0.0, at - time.time()))
            claimed.append(
                sorted(
                    m.server_id for m in monitors_claim(server_ids=ids, now=timezone.now() + timedelta(days=365 * r))
                )
            )
        print(json.dumps({"claimed": claimed}))


if __name__ == "__main__":
    main()
