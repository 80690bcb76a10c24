"""The pure part of monitoring: categories, the confirmation rule, rollup and uptime arithmetic."""

from __future__ import annotations

import pytest

from crawler.status import Category, Status
from monitoring.accepted_codes import AcceptedCodes, AcceptedCodesError, classify
from monitoring.check_stats import CategoryCounts, CheckSample, percentile, summarize, uptime
from monitoring.confirm import Confirmation, confirm
from monitoring.load_profile import load_profile
from monitoring.server_list import RowError, parse_server_row

ANY = AcceptedCodes()


def run(checks: str, *, fail_after: int = 2, recover_after: int = 1, start: Status = Status.UNKNOWN):
    """Feed checks given as letters (n=normal, d=delay, x=disconnect, e=error); return the statuses
    after each check and the changes as 'from>to' strings."""
    names = {"n": Category.NORMAL, "d": Category.DELAY, "x": Category.DISCONNECT, "e": Category.ERROR}
    letters = {Status(c.value): k for k, c in names.items()} | {Status.UNKNOWN: "?"}
    state, statuses, changes = Confirmation(start), [], []
    for letter in checks:
        state, change = confirm(state, names[letter], fail_after=fail_after, recover_after=recover_after)
        statuses.append(letters[state.status])
        if change:
            changes.append(f"{change.from_status.value}>{change.to_status.value}")
    return "".join(statuses), changes


class TestClassify:
    def test_the_four_categories_with_the_default_codes(self):
        assert classify(200, 0.1, 3.0, ANY) is Category.NORMAL
        assert classify(301, 0.1, 3.0, ANY) is Category.NORMAL
        assert classify(200, 3.5, 3.0, ANY) is Category.DELAY
        assert classify(None, 0.1, 3.0, ANY) is Category.DISCONNECT
        assert classify(503, 0.1, 3.0, ANY) is Category.ERROR
        assert classify(404, 9.0, 3.0, ANY) is Category.ERROR  # slow errors are errors, not delays

    def test_a_2xx_outside_the_accepted_codes_is_an_error(self):
        only_200 = AcceptedCodes.parse("200")
        assert classify(200, 0.1, 3.0, only_200) is Category.NORMAL
        assert classify(204, 0.1, 3.0, only_200) is Category.ERROR
        assert classify(302, 0.1, 3.0, only_200) is Category.ERROR

    def test_an_accepted_4xx_is_normal_or_delay(self):
        codes = AcceptedCodes.parse("200-299, 401")
        assert classify(401, 0.1, 3.0, codes) is Category.NORMAL
        assert classify(401, 4.0, 3.0, codes) is Category.DELAY
        assert classify(None, 0.1, 3.0, codes) is Category.DISCONNECT

    def test_accepted_codes_parse_and_print(self):
        assert str(AcceptedCodes.parse("401,200-299,200-299")) == "200-299,401"
        assert str(AcceptedCodes.parse("")) == ""
        for bad in ("abc", "600", "299-200", "200-", "99"):
            with pytest.raises(AcceptedCodesError):
                AcceptedCodes.parse(bad)


class TestConfirmation:
    def test_down_only_after_two_failures_in_a_row(self):
        assert run("nxnxxn") == ("nnnnxn", ["unknown>normal", "normal>disconnect", "disconnect>normal"])

    def test_a_single_failure_changes_nothing(self):
        statuses, changes = run("nxnenxn")
        assert statuses == "nnnnnnn" and changes == ["unknown>normal"]

    def test_disconnect_then_error_are_two_failures_and_the_latest_wins(self):
        assert run("nxe")[1] == ["unknown>normal", "normal>error"]

    def test_recovery_needs_m_good_checks(self):
        statuses, changes = run("xxnnxnnn", recover_after=2)
        assert statuses == "?xxnnnnn"
        assert changes == ["unknown>disconnect", "disconnect>normal"]
        # the interrupted recovery started over: x n | n x | n n -> only one change back
        statuses, changes = run("xxnxnn", recover_after=2)
        assert changes == ["unknown>disconnect", "disconnect>normal"] and statuses == "?xxxxn"

    def test_first_check_of_a_new_server(self):
        assert run("n")[1] == ["unknown>normal"]  # M=1: one good check is enough
        assert run("x")[1] == []  # one failure is not confirmed
        assert run("xx")[1] == ["unknown>disconnect"]

    def test_three_failures_with_n_3(self):
        assert run("nxxnxxx", fail_after=3)[1] == ["unknown>normal", "normal>disconnect"]
        assert run("nxxnxxx", fail_after=3)[0] == "nnnnnnx"

    def test_delay_needs_n_and_back_to_normal_needs_m(self):
        assert run("ndnddn")[1] == ["unknown>normal", "normal>delay", "delay>normal"]
        assert run("ndnddn")[0] == "nnnndn"

    def test_changing_failure_kind_needs_n_of_the_new_kind(self):
        assert run("xxexee")[1] == ["unknown>disconnect", "disconnect>error"]
        assert run("xxexee")[0] == "?xxxxe"

    def test_flapping_every_other_check_never_confirms_a_failure(self):
        statuses, changes = run("nxnxnxnxnx")
        assert changes == ["unknown>normal"] and set(statuses) == {"n"}


class TestArithmetic:
    def test_percentile_matches_hand_computation(self):
        values = [10.0, 20.0, 30.0, 40.0, 50.0]
        assert percentile(values, 50) == 30.0
        # rank = (5-1)*0.95 = 3.8 -> 40 + 0.8*(50-40) = 48
        assert percentile(values, 95) == pytest.approx(48.0)
        assert percentile([7.0], 95) == 7.0

    def test_summarize_counts_and_latency_of_answered_checks_only(self):
        samples = [
            CheckSample("normal", 200, 10.0, False),
            CheckSample("normal", 200, 30.0, False),
            CheckSample("delay", 200, 3500.0, False),
            CheckSample("error", 500, 20.0, False),
            CheckSample("disconnect", None, 15000.0, False),  # a timeout: not a response time
            CheckSample("disconnect", None, 1.0, True),  # during maintenance
        ]
        counts, lat = summarize(samples)
        assert (counts.normal, counts.delay, counts.disconnect, counts.error, counts.maintenance) == (2, 1, 1, 1, 1)
        assert lat.count == 4 and lat.min_ms == 10.0 and lat.max_ms == 3500.0
        assert lat.mean_ms == pytest.approx((10 + 30 + 3500 + 20) / 4)
        # sorted 10, 20, 30, 3500: rank 2.85 -> 30 + 0.85*3470
        assert lat.p95_ms == pytest.approx(30 + 0.85 * 3470)

    def test_uptime_leaves_maintenance_out(self):
        u = uptime(CategoryCounts(normal=90, delay=5, disconnect=3, error=2, maintenance=50))
        assert u.checks == 100 and u.maintenance == 50
        assert u.up == pytest.approx(95.0)
        assert u.shares == {"normal": 90.0, "delay": 5.0, "disconnect": 3.0, "error": 2.0}
        empty = uptime(CategoryCounts(maintenance=3))
        assert empty.up is None and empty.shares["normal"] is None

    def test_load_profile_is_the_check_weighted_mean_per_hour_of_day(self):
        profile = load_profile([(3, 12, 100.0), (3, 4, 300.0), (4, 0, 999.0), (23, 1, 50.0)])
        assert profile[3] == pytest.approx((12 * 100 + 4 * 300) / 16)  # 150
        assert profile[4] is None and profile[0] is None
        assert profile[23] == 50.0 and len(profile) == 24


class TestServerRows:
    def test_host_url_and_defaults(self):
        row = parse_server_row(["Example.ORG"])
        assert (row.scheme, row.host, row.port, row.health_url) == ("http", "example.org", 80, "")
        assert row.interval_s is None and row.crawler_num is None and row.accepted_codes == ""
        row = parse_server_row(["https://h.example:8443/health?x=1", "web", "3", "60", "2.5", "200, 204"])
        assert (row.scheme, row.port, row.group, row.crawler_num) == ("https", 8443, "web", 3)
        assert row.health_url == "https://h.example:8443/health?x=1"
        assert (row.interval_s, row.delay_threshold_s, row.accepted_codes) == (60.0, 2.5, "200,204")

    @pytest.mark.parametrize(
        "cells, message",
        [
            ([""], "empty"),
            (["ftp://h.example/"], "usable"),
            (["h.example", "g", "-1"], "crawler number"),
            (["h.example", "g", "", "abc"], "interval"),
            (["h.example", "g", "", "1"], "interval"),
            (["h.example", "g", "", "", "nan"], "threshold"),
            (["h.example", "g", "", "", "", "700"], "accepted"),
            (["h.example", "g", "", "", "", "", "", "", "extra"], "fields"),
        ],
    )
    def test_bad_rows_say_what_is_wrong(self, cells, message):
        with pytest.raises(RowError, match=message):
            parse_server_row(cells)


def test_status_values_are_the_stored_strings():
    from crawler.status import CONFIRMED, Status

    assert [s.value for s in CONFIRMED] == ["unknown", "normal", "delay", "disconnect", "error"]
    assert {c.value for c in Category} <= {s.value for s in Status}
    assert (Status.MAINTENANCE.value, Status.UNMONITORED.value) == ("maintenance", "unmonitored")


def test_rollup_count_fields_are_category_counts_fields_in_order():
    from dataclasses import fields

    from monitoring.check_stats import COUNT_FIELDS

    assert COUNT_FIELDS == tuple(f.name for f in fields(CategoryCounts))
