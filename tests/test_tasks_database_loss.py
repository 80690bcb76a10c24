"""Every task survives losing the database (tasks/retry.py): beat jobs skip the round, message-driven
tasks retry. No database here: the services are replaced by ones whose connection is gone."""

from __future__ import annotations

import pytest
from django.db import OperationalError

import ranking.services
import tasks.dashboard
import tasks.housekeeping
import tasks.monitor
import tasks.rank
import tasks.scan


def _lost(*args, **kwargs):
    raise OperationalError("server closed the connection unexpectedly")


# (task, module attribute holding the service it calls)
BEAT_JOBS = [
    (tasks.housekeeping.dispatch, tasks.housekeeping, "dispatch_due"),
    (tasks.housekeeping.reconcile_leases, tasks.housekeeping, "reconcile"),
    (tasks.housekeeping.check_partitions, tasks.housekeeping, "check_partitions_ensure"),
    (tasks.scan.sweep_active, tasks.scan, "scan_sweep"),
    (tasks.scan.sweep_inactive, tasks.scan, "scan_sweep"),
    (tasks.monitor.dispatch, tasks.monitor, "monitors_dispatch_due"),
    (tasks.monitor.rollup, tasks.monitor, "rollups_build"),
    (tasks.monitor.load_profiles, tasks.monitor, "load_profiles_build"),
    (tasks.monitor.prune, tasks.monitor, "history_prune"),
    # The ranking task imports its service when it runs (numpy and scipy stay out of the other workers).
    (tasks.rank.rank_crawl_task, ranking.services, "rank_crawl"),
    (tasks.dashboard.refresh_rollups, tasks.dashboard.rollups, "rollups_refresh"),
    (tasks.dashboard.refresh_dead_links, tasks.dashboard.rollups, "dead_links_refresh"),
]


@pytest.mark.parametrize(("task", "module", "service"), BEAT_JOBS, ids=[t.name for t, _, _ in BEAT_JOBS])
def test_a_beat_job_skips_its_round_when_the_database_is_gone(monkeypatch, caplog, task, module, service):
    monkeypatch.setattr(module, service, _lost)
    assert task() is None
    assert "database connection lost" in caplog.text


def test_a_beat_job_still_fails_on_an_error_that_is_a_bug(monkeypatch):
    def broken(**kwargs):
        raise ValueError("a bug, not a lost connection")

    monkeypatch.setattr(tasks.monitor, "rollups_build", broken)
    with pytest.raises(ValueError):
        tasks.monitor.rollup()


def test_the_monitor_check_is_retried_after_losing_the_database(monkeypatch):
    calls = []

    def flaky(*, server_ids):
        calls.append(server_ids)
        if len(calls) == 1:
            _lost()
        return []

    monkeypatch.setattr(tasks.monitor, "monitors_check", flaky)
    assert tasks.monitor.check_servers.apply(args=[[7, 8]]).get() == {"checked": 0}
    assert calls == [[7, 8], [7, 8]]
