"""The schedulers' pure logic (scheduling/): seed 000's tables and pause rule, seed 004's score and
reference selection, and the two simulators reproducing the papers' orderings on small sizes."""

from __future__ import annotations

import io
import random
from dataclasses import replace

import numpy as np
import pytest

from scheduling import sim_hybrid, sim_staleness
from scheduling.hybrid_sorting import HybridSorting, best_hour, pause_hours, policy_build, profile_normalized
from scheduling.staleness_score import Candidate, periods_since, prune_age, score, top_m


def _flat(value: float, **hours: float) -> list[float]:
    out = [value] * 24
    for h, v in hours.items():
        out[int(h[1:])] = v
    return out


# A hand-made example. L is lightly loaded all day (best hour 0); H is loaded all day, a little less at
# hour 5 (its best); V has a deep valley at hour 5.
L, H, V = 1, 2, 3
PROFILES = {L: _flat(1.0, h0=0.5), H: _flat(9.0, h5=6.0), V: _flat(7.0, h5=0.8)}


def test_hybrid_priority_table_for_three_servers_equals_the_hand_computation():
    # By hand, the paper's steps. Step 1, best hours: L -> 0, H -> 5, V -> 5.
    # Step 2: column 0 starts with L; column 5 with V (0.8) then H (6.0), ascending by their load there.
    # Step 3: the rest of each column by load in that hour. Column 0: L, then V (7) before H (9).
    # Column 5: then L (1). Every other column: L (1), V (7), H (9).
    expected = [[L, V, H] for _ in range(24)]
    expected[5] = [V, H, L]
    assert HybridSorting(PROFILES, [L, H, V]).table() == expected


def test_sorting_and_random_tables_for_the_same_servers():
    sorting = policy_build("sorting", PROFILES, [L, H, V]).table()
    assert sorting[5] == [V, L, H]  # the high server H is last even in its best hour: the paper's case 2)
    assert all(col == [L, V, H] for h, col in enumerate(sorting) if h != 5)
    assert policy_build("random", PROFILES, [H, V, L]).table() == [[H, V, L]] * 24


def test_order_keeps_only_the_asked_servers_and_puts_unprofiled_ones_last():
    policy = policy_build("hybrid", {**PROFILES, 4: None}, [L, H, V, 4])
    assert policy.order(5, [9, L, 4, H]) == [H, L, 9, 4]
    assert policy.order(7, []) == []


def test_hours_without_data_take_the_mean_of_the_others():
    raw = [None] * 24
    raw[3], raw[4] = 2.0, 4.0
    profile = profile_normalized(raw)
    assert profile[3] == 2.0 and profile[0] == 3.0 and best_hour(profile) == 3
    assert profile_normalized([None] * 24) is None and profile_normalized([1.0] * 23) is None


def test_pause_when_a_coming_hour_is_less_loaded_and_resume_there():
    profile = _flat(5.0, h10=8.0, h11=6.0, h12=2.0, h13=1.0)
    assert pause_hours(profile, 10, lookahead=1) == 1  # hour 11 (6) beats hour 10 (8)
    assert pause_hours(profile, 10, lookahead=3) == 3  # the best of 11-13 is 13
    assert pause_hours(profile, 12, lookahead=3) == 1
    assert pause_hours(profile, 13, lookahead=3) == 0  # nothing ahead is better: go on
    assert pause_hours(profile, 10, lookahead=0) == 0  # the rule turned off
    assert pause_hours(_flat(5.0, h1=4.8), 0, lookahead=2, margin=0.1) == 0  # 4 % better is not enough
    assert pause_hours(_flat(5.0, h23=1.0), 22, lookahead=3) == 1  # wraps round midnight


def test_only_hybrid_pauses():
    profiles = {1: _flat(5.0, h3=1.0)}
    assert policy_build("hybrid", profiles, pause_lookahead=2).pause(1, 2) == 1
    assert policy_build("sorting", profiles, pause_lookahead=2).pause(1, 2) == 0
    assert policy_build("hybrid", profiles, pause_lookahead=2).pause(99, 2) == 0  # no profile, no pause


def test_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="random, sorting, hybrid"):
        policy_build("fifo", {})


# --------------------------------------------------------------------------------------------------
# Seed 004


def test_score_is_the_papers_expression_and_the_oldest_wins_at_equal_cost():
    assert score(3, 10, 2.0, 1.5) == 10 * 3 - 2.0 * 1.5
    assert periods_since(59.9, 60) == 0 and periods_since(120.0, 60) == 2
    cands = [Candidate(1, 2, 10.0, 1.0), Candidate(2, 5, 10.0, 1.0), Candidate(3, 5, 1.0, 1.0)]
    assert top_m(cands, 2, remaining=10) == [3, 2]  # equal staleness: the cheaper first
    assert top_m(cands, 0, remaining=10) == []


def test_same_score_goes_to_the_smaller_id():
    cands = [Candidate(7, 3, 1.0, 1.0), Candidate(4, 3, 1.0, 1.0), Candidate(5, 1, 0.0, 0.0)]
    assert top_m(cands, 3, remaining=5) == [4, 7, 5]


def test_pruning_bound_never_drops_a_page_of_the_top_m():
    rng = random.Random(4)
    for _ in range(200):
        remaining = rng.choice([1, 7, 60])
        cands = [Candidate(i, rng.randrange(50), rng.uniform(0, 200), rng.uniform(0, 3)) for i in range(60)]
        m = rng.randrange(1, 30)
        oldest = sorted(cands, key=lambda c: (-c.staleness, c.id))[: rng.randrange(m, 60)]
        sample = sorted((score(c.staleness, remaining, c.size, c.response) for c in oldest), reverse=True)
        least = prune_age(sample[m - 1], remaining=remaining)
        kept = [c for c in cands if c.staleness >= least]
        assert top_m(kept, m, remaining=remaining) == top_m(cands, m, remaining=remaining)


# --------------------------------------------------------------------------------------------------
# The simulators: the papers' orderings over several seeds, on small sizes


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hybrid_sorting_finishes_before_sorting_before_random(seed):
    runs = sim_hybrid.compare(sim_hybrid.Config(), seed)
    assert runs["hybrid"].hours < runs["sorting"].hours < runs["random"].hours
    # Every page was collected, whatever the order.
    total = sum(s.capacity for s in sim_hybrid.servers_make(sim_hybrid.Config(), seed))
    assert all(sum(r.per_hour) == pytest.approx(total) for r in runs.values())


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_staleness_schedule_beats_both_baselines(seed):
    cfg = replace(sim_staleness.Config(), pages=1500, periods=72)
    runs = sim_staleness.compare(cfg, seed)
    ours = runs["ours"].mean_minutes
    assert all(ours < runs[b].mean_minutes for b in sim_staleness.BASELINES)
    assert ours <= runs["round-robin"].mean_minutes


def test_change_frequency_knows_only_what_its_fetches_saw():
    from scheduling.freshness import change_rate

    seen = sim_staleness.Seen.none(3)
    # Nothing seen yet: every page has the prior, whatever its true rate.
    assert list(seen.rates()) == pytest.approx([sim_staleness.PRIOR_PER_HOUR] * 3)
    seen.checks[:] = [4, 4, 10]
    seen.changed[:] = [0, 4, 3]
    seen.watched[:] = [8.0, 8.0, 30.0]  # hours
    for k in range(3):  # the crawler's own estimator, in hours instead of seconds
        expected = change_rate(checks=int(seen.checks[k]), changed=int(seen.changed[k]),
                               watched=seen.watched[k] * 3600, prior=sim_staleness.PRIOR_PER_HOUR / 3600)  # fmt: skip
        assert seen.rates()[k] == pytest.approx(expected * 3600)
    # Fetches find changes at the true rate: a page that changes hourly, fetched every 4 hours, almost always.
    rng = np.random.default_rng(5)
    many = sim_staleness.Seen.none(1000)
    many.fetched(list(range(1000)), np.full(1000, 4.0), np.full(1000, 1.0), rng)
    assert 0.97 < many.changed.mean() < 0.99


# --------------------------------------------------------------------------------------------------
# `schedule_table --profiles FILE.csv --json`: the table as a contract


def _csv(tmp_path, profiles: dict[str, list[float]], *, shuffle: random.Random | None = None) -> str:
    rows = [f"{name},{h},{load}" for name, loads in profiles.items() for h, load in enumerate(loads)]
    if shuffle:
        shuffle.shuffle(rows)
    path = tmp_path / "profiles.csv"
    path.write_text("server,hour,load\n" + "\n".join(rows) + "\n")
    return str(path)


def _table_json(path: str, policy: str) -> dict[str, list[str]]:
    import json

    from django.core.management import call_command

    out = io.StringIO()
    call_command("schedule_table", "--profiles", path, "--policy", policy, "--json", stdout=out)
    return json.loads(out.getvalue())


def _paper_hybrid(profiles: dict[str, list[float]]) -> dict[str, list[str]]:
    """The paper's steps, written out again: best hour by a minimum scan (the first minimum), each column
    those servers first ascending, then every other server by its load there; equal loads by name."""
    best = {}
    for name, loads in profiles.items():
        b = 0
        for h in range(1, 24):
            if loads[h] < loads[b]:
                b = h
        best[name] = b
    out = {}
    for h in range(24):
        key = lambda n, h=h: (profiles[n][h], n)  # noqa: E731
        first = sorted((n for n in profiles if best[n] == h), key=key)
        out[str(h)] = first + sorted((n for n in profiles if best[n] != h), key=key)
    return out


@pytest.mark.parametrize("seed", range(5))
def test_schedule_table_from_unseen_profiles_is_the_papers_construction(tmp_path, seed):
    rng = random.Random(1000 + seed)
    n = rng.randint(3, 40)
    names = [f"srv-{rng.randrange(10**6):06d}-{i}" for i in range(n)]
    # Small integer loads: many equal loads, and several hours share a server's least load.
    profiles = {name: [rng.randint(1, 6) for _ in range(24)] for name in names}
    path = _csv(tmp_path, profiles, shuffle=rng)
    assert _table_json(path, "hybrid") == _paper_hybrid(profiles)
    sorting = _table_json(path, "sorting")
    assert list(sorting) == [str(h) for h in range(24)]
    for h in range(24):
        assert sorting[str(h)] == sorted(names, key=lambda s: (profiles[s][h], s))


@pytest.mark.parametrize("seed", range(3))
def test_schedule_table_command_line_on_unseen_float_profiles_with_missing_hours(tmp_path, seed):
    """`python manage.py schedule_table --profiles F.csv --policy hybrid|sorting --json`, the real command
    line, on profiles no other test uses: float loads (one decimal, so equal loads occur), some hours with
    no row (they take the mean of the server's other hours), names that sort differently from their order
    in the file."""
    import json
    import os
    import subprocess
    import sys
    from pathlib import Path

    rng = random.Random(7000 + seed)
    names = [f"{rng.choice('zyxw')}{rng.randrange(1000)}.example.{i}" for i in range(rng.randint(5, 30))]
    filled, rows = {}, []
    for name in names:
        loads = [round(rng.uniform(0.5, 4.0), 1) for _ in range(24)]
        missing = set(rng.sample(range(24), rng.randint(0, 5)))
        known = [v for h, v in enumerate(loads) if h not in missing]
        mean = sum(known) / len(known)
        filled[name] = [mean if h in missing else v for h, v in enumerate(loads)]
        rows += [f"{name},{h},{v}" for h, v in enumerate(loads) if h not in missing]
    rng.shuffle(rows)
    path = tmp_path / "unseen.csv"
    path.write_text("server,hour,load\n" + "\n".join(rows) + "\n")
    root = Path(__file__).resolve().parent.parent
    env = {k: v for k, v in os.environ.items() if not k.startswith("DATABASE_URL")}
    env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'db.sqlite3'}"  # the command reads only the CSV

    def table(policy: str) -> dict[str, list[str]]:
        cmd = [sys.executable, "manage.py", "schedule_table", "--profiles", str(path), "--policy", policy, "--json"]
        out = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True, timeout=120, check=True)
        return json.loads(out.stdout)

    assert table("hybrid") == _paper_hybrid(filled)
    sorting = table("sorting")
    assert sorting == {str(h): sorted(names, key=lambda s, h=h: (filled[s][h], s)) for h in range(24)}


def test_schedule_table_hand_example_with_ties(tmp_path):
    # b and c both have their least load (1) in hour 2 and 5; the earliest, 2, is their best hour.
    # In hour 2 they come first, equal loads by name (b before c); a (load 1 there too) follows.
    flat = lambda v, **h: [h.get(f"h{i}", v) for i in range(24)]  # noqa: E731
    profiles = {"c": flat(4, h2=1, h5=1), "b": flat(3, h2=1, h5=1), "a": flat(1, h2=1, h7=0)}
    table = _table_json(_csv(tmp_path, profiles), "hybrid")
    assert table["2"] == ["b", "c", "a"]
    assert table["5"] == ["a", "b", "c"]  # nobody's best hour: by load, ties by name
    assert table["7"] == ["a", "b", "c"]
    assert table["0"] == ["a", "b", "c"]
    assert _table_json(_csv(tmp_path, profiles), "random")["9"] == ["c", "b", "a"]  # the list as written


def test_schedule_table_refuses_a_bad_profile_csv(tmp_path):
    from django.core.management import CommandError, call_command

    bad = tmp_path / "bad.csv"
    for text, message in [
        ("name,hour,load\na,0,1\n", "header"),
        ("server,hour,load\na,24,1\n", "hour 0-23"),
        ("server,hour,load\na,1,x\n", "number"),
        ("server,hour,load\na,1,1\na,1,2\n", "second row"),
    ]:
        bad.write_text(text)
        with pytest.raises(CommandError, match=message):
            call_command("schedule_table", "--profiles", str(bad), "--json", stdout=io.StringIO())
