"""crawlcore.db.params.array_param: its quick path for plain ints and texts writes what the per-value path
writes, and every value that needs escaping or is not of the column's type still takes the per-value path."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from crawlcore.db import params


def _per_value(values: list, kind: str):
    """array_param with its quick path switched off."""
    real = params._array_fast
    params._array_fast = lambda values, kind: None
    try:
        return params.array_param(values, kind)
    finally:
        params._array_fast = real


@given(st.lists(st.text(), max_size=30))
def test_texts_are_written_as_the_per_value_path_writes_them(values):
    assert params.array_param(values, "text") == _per_value(values, "text")


@given(st.lists(st.integers(min_value=-(2**63), max_value=2**63 - 1), max_size=30))
def test_integers_are_written_as_the_per_value_path_writes_them(values):
    assert params.array_param(values, "bigint") == _per_value(values, "bigint")


@pytest.mark.parametrize(
    "values, kind, expected",
    [
        (['a "quoted" word', "back\\slash", "plain"], "text", '{"a \\"quoted\\" word","back\\\\slash","plain"}'),
        (["http://a.example/", None], "text", '{"http://a.example/",NULL}'),
        ([1, None, 3], "bigint", "{1,NULL,3}"),
        ([], "text", "{}"),
        ([], "bigint", "{}"),
    ],
)
def test_values_that_need_care_are_escaped_or_null(values, kind, expected):
    assert params.array_param(values, kind) == expected


def test_times_are_written_each_as_its_own_even_when_one_repeats():
    t, u = datetime(2026, 11, 28, 7, 0, tzinfo=UTC), datetime(2026, 11, 28, 8, 30, tzinfo=UTC)
    expected = '{"2026-11-28T07:00:00+00:00","2026-11-28T07:00:00+00:00",NULL,"2026-11-28T08:30:00+00:00"}'
    assert params.array_param([t, t, None, u], "timestamptz") == expected


def test_a_value_of_another_type_keeps_the_list_form():
    # A bool is no integer of a bigint column, a number no text: the driver adapts (or refuses) them.
    assert params.array_param([1, True], "bigint") == [1, True]
    assert params.array_param(["a", 1], "text") == ["a", 1]
