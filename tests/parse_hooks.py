"""Readers the parse's pooled processes run in tests (crawlcore.services.extract_parse.READER names one): a
page that takes its time, one that never ends, one a test says must not be read. Module-level functions with no
Django import, as crawler.child_pool requires."""

from __future__ import annotations

import time

from crawler import pdf
from crawler.pdf import is_pdf
from crawler.read import read_answer


def slow(item):
    time.sleep(4.5)  # more than twice the test's CRAWL_REDISPATCH_AFTER, in one page
    return read_answer(item)


def stuck_on_stuck(item):
    if item[1].endswith("/stuck"):
        time.sleep(120)  # a parse no bound of crawler.parse foresaw
    return read_answer(item)


def no_pdf(item):
    if is_pdf(item[2]):
        raise AssertionError(f"{item[1]} read again")
    return read_answer(item)


def pdf_briefly(item):
    """A PDF read within 0.3 s: set in the pooled process itself (a test's monkeypatch stays in the test's
    process), and put back after, for the next test the process serves."""
    before, pdf.MAX_SECONDS = pdf.MAX_SECONDS, 0.3
    try:
        return read_answer(item)
    finally:
        pdf.MAX_SECONDS = before
