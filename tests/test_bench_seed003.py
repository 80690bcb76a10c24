"""bench.seed003's pieces: its generated-database figures come from the real `rank` commands on PostgreSQL,
and the table says where each figure comes from. The benchmark itself is not a test."""

from __future__ import annotations

import pytest

from bench import seed003

pytestmark = pytest.mark.integration


def test_generated_database_is_ranked_by_both_methods_and_the_table_labels_its_sources(capsys):
    figures = seed003.generated_database(3000)
    exact, local = figures["rank"]["blockrank"], figures["rank"]["blockrank-local"]
    assert exact["pages"] == local["pages"] == 3000 and exact["links"] == figures["links"]
    assert exact["method"] == "blockrank" and local["method"] == "blockrank-local"
    assert local["iterations"]["global"] == 0 and 0 < local["exact_pagerank"]["l1_distance"] < 2
    crawl = {"pages": 1000, "seconds": 10.0, "pages_per_s": 100.0}
    seed003.print_report(None, {3000: figures})
    out = capsys.readouterr().out
    assert "GENERATED DATABASE 3,000 pages" in out and "L1 distance to exact" in out
    assert "100,000 | 2,750 | not run" in out  # the paper's row, ours not run at that size
    assert seed003._crawl_figure(100_000, crawl) == ("1,000 (extrapolated)", 1000.0)
    assert seed003._crawl_figure(1000, crawl) == ("10 (measured)", 10.0)
    assert seed003._crawl_figure(1000, None) == ("not run", None)
