"""The project's documents are the project's: no file cites a document outside the repository (the design
notes or the papers' folder beside it), and no file but CHANGELOG.md cites issue numbers (an issue's story
and its measurements belong in commit messages, the changelog and the benchmark documents, bench/*.md)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The names of the documents that live beside the repository, not in it, built from parts so that this file
# names none of them itself (docs/ARCHITECTURE.md says what of them the code needs, in our own words).
_NOTES, _PAPERS, _BESIDE = "DES" + "IGN", "see" + "ds", "sha" + "red"
OUTSIDE = re.compile(rf"{_NOTES}(?:\.md|\s*§)|\b{_PAPERS}/|\.\./{_BESIDE}|\b{_BESIDE}/{_PAPERS}")
ISSUE = re.compile(r"\b[Ii]ssues?\s+\d+")
ISSUE_ANYWHERE = re.compile(r"issue ?#?[0-9]+", re.IGNORECASE)
TEXT = (".py", ".md", ".html", ".txt", ".yaml", ".yml", ".sh", ".toml", ".ini", ".cfg", ".css", ".js")


def _tracked() -> list[str]:
    out = subprocess.run(["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    return [f for f in out.splitlines() if f.endswith(TEXT) or f == "Makefile"]


def _hits(pattern: re.Pattern, files: list[str]) -> list[str]:
    found = []
    for rel in files:
        path = ROOT / rel
        if not path.is_file() or rel == "tests/test_citations.py":
            continue
        for n, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            if pattern.search(line):
                found.append(f"{rel}:{n}: {line.strip()[:100]}")
    return found


def test_no_file_cites_a_document_outside_the_repository():
    assert _hits(OUTSIDE, _tracked()) == []


def test_no_file_but_the_changelog_cites_issue_numbers():
    # An issue number means nothing to someone who clones the project; what changed for users, round by round,
    # is told in CHANGELOG.md, the one file that may name them.
    assert _hits(ISSUE_ANYWHERE, [f for f in _tracked() if f != "CHANGELOG.md"]) == []


def test_the_patterns_see_what_they_look_for():
    assert OUTSIDE.search(f"the life-cycle ({_NOTES}.md §4)") and OUTSIDE.search(f"see ../{_BESIDE}/{_PAPERS}/1.txt")
    word = "iss" + "ue"  # built from parts, so that this file cites no issue number itself
    assert ISSUE.search(f"# measured in {word} 25: 3.21 ms") and not ISSUE.search("no issues here")
    assert ISSUE_ANYWHERE.search(f"see {word.title()} #7") and ISSUE_ANYWHERE.search(f"({word}25)")
