from __future__ import annotations

import pytest

from crawler.lifecycle import (
    TRANSITIONS,
    Agent,
    Event,
    InvalidTransition,
    State,
    backoff_after,
    event_for_fetch,
    next_state,
)

S, E = State, Event


@pytest.mark.parametrize(
    ("state", "event", "agent", "expected"),
    [
        (S.INIT, E.FETCHED, Agent.LOAD, S.VISITED),
        (S.INIT, E.NO_RESPONSE, Agent.LOAD, S.NO_RESPONSE_1),
        (S.VISITED, E.CHANGED, Agent.ACTIVE_SCAN, S.INIT),
        (S.VISITED, E.UNCHANGED, Agent.ACTIVE_SCAN, S.VISITED),
        (S.VISITED, E.NO_RESPONSE, Agent.ACTIVE_SCAN, S.NO_RESPONSE_1),
        (S.NO_RESPONSE_1, E.RESPONDS, Agent.INACTIVE_SCAN, S.VISITED),
        (S.NO_RESPONSE_1, E.RESPONDS_RELOAD, Agent.INACTIVE_SCAN, S.INIT),
        (S.NO_RESPONSE_1, E.NO_RESPONSE, Agent.INACTIVE_SCAN, S.NO_RESPONSE_2),
        (S.NO_RESPONSE_2, E.RESPONDS, Agent.INACTIVE_SCAN, S.VISITED),
        (S.NO_RESPONSE_2, E.NO_RESPONSE, Agent.INACTIVE_SCAN, S.DEAD),
        (S.DEAD, E.REVIVE, Agent.ADMIN, S.INIT),
    ],
)
def test_design_table_moves(state, event, agent, expected):
    assert next_state(state, event, agent) == expected


def test_gone_is_final_from_every_live_state():
    for state in (S.INIT, S.VISITED, S.NO_RESPONSE_1, S.NO_RESPONSE_2):
        assert TRANSITIONS[(state, E.GONE)] == S.DEAD


def test_dead_stays_dead_unless_revived():
    for event in Event:
        if event is E.REVIVE:
            continue
        with pytest.raises(InvalidTransition):
            next_state(S.DEAD, event)


def test_dead_after_three_failed_checks():
    state = S.INIT
    state = next_state(state, E.NO_RESPONSE, Agent.LOAD)
    state = next_state(state, E.NO_RESPONSE, Agent.INACTIVE_SCAN)
    state = next_state(state, E.NO_RESPONSE, Agent.INACTIVE_SCAN)
    assert state == S.DEAD


def test_agent_cannot_act_outside_its_job():
    with pytest.raises(InvalidTransition):
        next_state(S.DEAD, E.REVIVE, Agent.LOAD)
    with pytest.raises(InvalidTransition):
        next_state(S.INIT, E.FETCHED, Agent.EXTRACT)


def test_init_cannot_be_declared_unchanged():
    with pytest.raises(InvalidTransition, match="no transition from init on unchanged"):
        next_state(S.INIT, E.UNCHANGED)


@pytest.mark.parametrize(
    ("status", "retry_after", "event"),
    [
        (200, False, E.FETCHED),
        (301, False, E.FETCHED),
        (304, False, E.FETCHED),
        (404, False, E.NO_RESPONSE),
        (500, False, E.NO_RESPONSE),
        (503, False, E.NO_RESPONSE),
        (None, False, E.NO_RESPONSE),
        (410, False, E.GONE),
        (429, False, None),
        (503, True, None),
    ],
)
def test_event_for_fetch(status, retry_after, event):
    assert event_for_fetch(status, has_retry_after=retry_after) == event


@pytest.mark.parametrize(
    ("state", "seconds"),
    [(S.NO_RESPONSE_1, 3600.0), (S.NO_RESPONSE_2, 21600.0), (S.DEAD, None), (S.INIT, None), (S.VISITED, None)],
)
def test_only_the_noresponse_states_wait_their_back_off(state, seconds):
    assert backoff_after(state, nr1_backoff=3600.0, nr2_backoff=21600.0) == seconds


def test_each_failed_check_on_the_way_to_dead_waits_longer():
    waits, state = [], S.VISITED
    for _ in range(3):
        state = next_state(state, E.NO_RESPONSE)
        waits.append(backoff_after(state, nr1_backoff=60, nr2_backoff=600))
    assert waits == [60, 600, None] and state == S.DEAD
