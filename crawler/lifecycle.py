"""The URL life-cycle: states, events, and the one table that says which moves exist.

Pure: the data layer asks `next_state()` before its guarded UPDATE, so a move that is not in this table
is refused before it can reach the database.
"""

from __future__ import annotations

import enum


class State(enum.StrEnum):
    INIT = "init"
    VISITED = "visited"
    NO_RESPONSE_1 = "noresponse1"
    NO_RESPONSE_2 = "noresponse2"
    DEAD = "dead"


class Event(enum.StrEnum):
    FETCHED = "fetched"  # a valid response to a GET (2xx/3xx)
    NO_RESPONSE = "no_response"  # timeout, refused, DNS failure, reset, 4xx other than 429, 5xx
    CHANGED = "changed"  # a re-check saw Last-Modified, ETag or Content-Length differ
    UNCHANGED = "unchanged"  # a re-check found the page as stored
    RESPONDS = "responds"  # a NoResponse URL answers again and is known to be unchanged
    RESPONDS_RELOAD = "responds_reload"  # it answers, but was never loaded or has changed: load it again
    GONE = "gone"  # 410: final
    REVIVE = "revive"  # an operator brings a Dead URL back


class Agent(enum.StrEnum):
    LOAD = "load"
    EXTRACT = "extract"
    ACTIVE_SCAN = "active_scan"
    INACTIVE_SCAN = "inactive_scan"
    ADMIN = "admin"
    MONITOR = "monitor"  # scheduled server checks: they record StatusChecks, never move a URL
    RENDER = "render"  # re-fetches a Visited page in a browser: records its checks, never moves a URL


S, E = State, Event

TRANSITIONS: dict[tuple[State, Event], State] = {
    (S.INIT, E.FETCHED): S.VISITED,
    (S.INIT, E.NO_RESPONSE): S.NO_RESPONSE_1,
    (S.INIT, E.GONE): S.DEAD,
    (S.VISITED, E.CHANGED): S.INIT,
    (S.VISITED, E.UNCHANGED): S.VISITED,
    (S.VISITED, E.NO_RESPONSE): S.NO_RESPONSE_1,
    (S.VISITED, E.GONE): S.DEAD,
    (S.NO_RESPONSE_1, E.RESPONDS): S.VISITED,
    (S.NO_RESPONSE_1, E.RESPONDS_RELOAD): S.INIT,
    (S.NO_RESPONSE_1, E.NO_RESPONSE): S.NO_RESPONSE_2,
    (S.NO_RESPONSE_1, E.GONE): S.DEAD,
    (S.NO_RESPONSE_2, E.RESPONDS): S.VISITED,
    (S.NO_RESPONSE_2, E.RESPONDS_RELOAD): S.INIT,
    (S.NO_RESPONSE_2, E.NO_RESPONSE): S.DEAD,
    (S.NO_RESPONSE_2, E.GONE): S.DEAD,
    (S.DEAD, E.REVIVE): S.INIT,
}

# Which agent may cause which event; the data layer checks it too, so a bug in one agent cannot
# make it act outside its job (an extract agent never declares a URL dead).
AGENT_EVENTS: dict[Agent, frozenset[Event]] = {
    Agent.LOAD: frozenset({E.FETCHED, E.NO_RESPONSE, E.GONE}),
    Agent.EXTRACT: frozenset(),
    Agent.ACTIVE_SCAN: frozenset({E.CHANGED, E.UNCHANGED, E.NO_RESPONSE, E.GONE}),
    Agent.INACTIVE_SCAN: frozenset({E.RESPONDS, E.RESPONDS_RELOAD, E.NO_RESPONSE, E.GONE}),
    Agent.ADMIN: frozenset({E.REVIVE}),
    Agent.MONITOR: frozenset(),
    Agent.RENDER: frozenset(),
}


class InvalidTransition(ValueError):
    def __init__(self, state: State, event: Event, agent: Agent | None = None):
        self.state, self.event, self.agent = state, event, agent
        who = f" by {agent.value}" if agent else ""
        super().__init__(f"no transition from {state.value} on {event.value}{who}")


def next_state(state: State | str, event: Event | str, agent: Agent | str | None = None) -> State:
    """The state after `event`, or InvalidTransition when the table has no such move."""
    state, event = State(state), Event(event)
    agent = Agent(agent) if agent is not None else None
    if agent is not None and event not in AGENT_EVENTS[agent]:
        raise InvalidTransition(state, event, agent)
    try:
        return TRANSITIONS[(state, event)]
    except KeyError:
        raise InvalidTransition(state, event, agent) from None


def is_valid_response(status: int | None) -> bool:
    """A response that counts as 'fetched' for the life-cycle: 2xx and 3xx."""
    return status is not None and 200 <= status < 400


def event_for_fetch(status: int | None, *, has_retry_after: bool = False) -> Event | None:
    """What a fetch result means for the life-cycle, or None for 'come back later, change nothing'.

    429, and 503 with Retry-After, are a server asking for patience: the server backs off, and the agents
    then count the URL so answered a failure (NO_RESPONSE, on its own back-off) themselves, so that it does
    not stand first in line again when the pause ends (crawlcore.services.agent, AgentBatch.back_off).
    """
    if status == 429 or (status == 503 and has_retry_after):
        return None
    if status == 410:
        return Event.GONE
    if is_valid_response(status):
        return Event.FETCHED
    return Event.NO_RESPONSE


def backoff_after(state: State | str, *, nr1_backoff: float, nr2_backoff: float) -> float | None:
    """Seconds before a URL that has just moved to `state` is re-checked, or None when no back-off applies.

    Only the NoResponse states wait (CRAWL_NR1_BACKOFF, CRAWL_NR2_BACKOFF): re-checks of a failing URL are
    spaced out so that a host down for an hour is not declared dead in a minute. Dead is final; Init and
    Visited are not failing, so their next check is not a back-off.
    """
    return {State.NO_RESPONSE_1: nr1_backoff, State.NO_RESPONSE_2: nr2_backoff}.get(State(state))
