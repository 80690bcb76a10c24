"""The benchmarks' raw output: runs started in the same second each keep their own file."""

from __future__ import annotations

from bench.harness import results


def test_runs_of_one_second_each_keep_their_own_file(tmp_path, monkeypatch):
    monkeypatch.setattr(results, "RESULTS", tmp_path)
    monkeypatch.setattr(results, "commit", lambda: "abc1234")
    paths = []
    for _ in range(3):
        path = results.out_path("ranking", None)
        path.write_text("{}")
        paths.append(path)
    assert len(set(paths)) == 3
    assert all(p.parent == tmp_path and p.name.startswith("ranking-") and p.suffix == ".json" for p in paths)
    assert results.out_path("ranking", "given.json").name == "given.json"
