"""The user guide's examples run: every `manage.py …` and `make …` line in a code block of docs/*.md is either
executed here, in the embedded mode against the local test web, or marked in its page with why it cannot be
(`<!-- not run: REASON -->` on the line before its block). Synopses (```text blocks: the options in brackets)
are not run, but every option they and the examples name must be one the command's parser knows, so a renamed
option breaks this test rather than the reader.

The pages run in the guide's order, one database for all of them (a page may use what an earlier one made),
with the test web on a free port where the guide says :8000 and a webhook receiver where it says :8099.
A block with a title (```yaml title="jobs.yaml"`, shown as the file's name on the page) is written to that file
before the page's next command runs.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import yaml

from testweb.alerts import webhook_receiver
from testweb.server import TestWebServer
from testweb.site import SiteSpec

from .crawlcheck import clean_env

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
MARK = re.compile(r"<!--\s*not run:\s*(.+?)\s*-->")
COMMAND = re.compile(r"(?:^|\s)(?:\S*python\S*\s+)?manage\.py\s+([a-z_]+)(.*)$")
MAKE = re.compile(r"^\s*make\s+([a-z][a-z-]*)")
TITLE = re.compile(r'title="([^"/]+)"')
PER_COMMAND_S = 240


@dataclass
class Example:
    page: str
    line: int
    text: str
    kind: str  # "run", "marked" or "synopsis"
    reason: str = ""
    files: tuple[tuple[str, str], ...] = ()  # yaml files to write before it runs


def _pages() -> list[Path]:
    nav = yaml.safe_load((ROOT / "mkdocs.yml").read_text())["nav"]
    order: list[str] = []

    def walk(node):
        if isinstance(node, str):
            order.append(node)
        elif isinstance(node, dict):
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(nav)
    return [DOCS / p for p in order if not p.startswith(("reference/", "bench/")) and (DOCS / p).is_file()]


def examples() -> list[Example]:
    found: list[Example] = []
    for page in _pages():
        lines = page.read_text(encoding="utf-8").splitlines()
        fence, reason, pending_files, block_start = None, "", [], 0
        body: list[str] = []
        title = None
        joined = ""
        for n, line in enumerate(lines, 1):
            if fence is None:
                if line.startswith("```"):
                    info = line[3:].strip()
                    fence = info.split()[0] if info else "text"
                    titled = TITLE.search(info)
                    title = titled.group(1) if titled else None
                    previous = lines[n - 2] if n >= 2 else ""
                    marked = MARK.search(previous)
                    reason = marked.group(1) if marked else ""
                    body, block_start = [], n
                continue
            if line.startswith("```"):
                if title:
                    pending_files.append((title, "\n".join(body) + "\n"))
                fence = None
                continue
            if title:
                body.append(line)
                continue
            if line.rstrip().endswith("\\"):
                joined += line.rstrip()[:-1] + " "
                continue
            text, joined = joined + line, ""
            if not (COMMAND.search(text) or MAKE.match(text)):
                continue
            kind = "synopsis" if fence == "text" else ("marked" if reason else "run")
            rel = str(page.relative_to(DOCS))
            found.append(Example(rel, n, text.strip(), kind, reason, tuple(pending_files) if kind == "run" else ()))
            if kind == "run":
                pending_files = []
        assert fence is None, f"{page.name}: a code block from line {block_start} is never closed"
    return found


def _options_named(text: str) -> list[str]:
    return re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", text.split(" #", 1)[0])


def test_every_option_the_guide_names_is_one_its_command_takes():
    from django.core.management import get_commands, load_command_class

    commands = get_commands()
    problems = []
    for ex in examples():
        match = COMMAND.search(ex.text)
        if not match:
            continue
        name = match.group(1)
        if name not in commands:
            problems.append(f"{ex.page}:{ex.line}: no command {name!r}")
            continue
        parser = load_command_class(commands[name], name).create_parser("manage.py", name)
        known = set(parser._option_string_actions)
        for sub in getattr(parser, "_subparsers", None) and parser._subparsers._group_actions or ():
            for subparser in getattr(sub, "choices", {}).values():
                known |= set(subparser._option_string_actions)
        problems += [f"{ex.page}:{ex.line}: {name} has no option {o}" for o in _options_named(match.group(2))
                     if o not in known]  # fmt: skip
    assert problems == []


def test_every_make_target_the_guide_names_exists():
    makefile = (ROOT / "Makefile").read_text()
    targets = set(re.findall(r"^([a-z][a-z-]*)\s*:", makefile, re.M))
    named = [(ex, MAKE.match(ex.text).group(1)) for ex in examples() if MAKE.match(ex.text)]
    assert [f"{ex.page}:{ex.line}: make {t}" for ex, t in named if t not in targets] == []


def test_every_example_is_run_or_says_why_not():
    unmarked_synopses = [ex for ex in examples() if ex.kind == "synopsis" and "[" not in ex.text and "|" not in ex.text
                         and not re.search(r"\b[A-Z]{2,}\b", ex.text)]  # fmt: skip
    # A synopsis has placeholders (FILE, [--option]); a plain command in a text block is an example in hiding.
    assert [f"{ex.page}:{ex.line}: {ex.text}" for ex in unmarked_synopses] == []


def _shell_line(text: str, ports: dict[str, int]) -> str:
    for guide_port, port in ports.items():
        text = text.replace(f":{guide_port}", f":{port}")
    text = re.sub(r"(?:\.venv/bin/)?python3?\s+manage\.py", f"{shlex.quote(sys.executable)} {ROOT / 'manage.py'}", text)
    return text


def test_the_guides_examples_run(tmp_path, capsys):
    found = examples()
    runnable = [ex for ex in found if ex.kind == "run"]
    marked = [ex for ex in found if ex.kind == "marked"]
    with TestWebServer(SiteSpec(first_octet=10)) as web, webhook_receiver() as receiver:
        ports = {"8000": web.port, "8099": receiver.server_address[1]}
        env = clean_env(CRAWLADMIN_DATA_DIR=str(tmp_path / "data"), CRAWL_ALLOW_PRIVATE="127.0.0.0/8",
                        ALERTS_ALLOW_PRIVATE="127.0.0.0/8", PYTHONPATH=str(ROOT))  # fmt: skip
        env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
        failures, took = [], []
        for ex in runnable:
            for name, text in ex.files:
                (tmp_path / name).write_text(text.replace(":8000", f":{web.port}"), encoding="utf-8")
            if MAKE.match(ex.text):
                failures.append(f"{ex.page}:{ex.line}: a make line cannot run here; mark it")
                continue
            line = _shell_line(ex.text, ports)
            started = time.monotonic()
            proc = subprocess.run(["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True,
                                  timeout=PER_COMMAND_S)  # fmt: skip
            took.append((time.monotonic() - started, f"{ex.page}:{ex.line}"))
            if proc.returncode != 0:
                failures.append(f"{ex.page}:{ex.line}: exit {proc.returncode}: {ex.text}\n{proc.stderr[-1500:]}")
    with capsys.disabled():
        print(f"\nthe guide's examples: {len(runnable)} run, {len(marked)} marked not run, "
              f"{len(found) - len(runnable) - len(marked)} synopses checked against their parsers; slowest: "
              + ", ".join(f"{where} {s:.0f} s" for s, where in sorted(took, reverse=True)[:3]))  # fmt: skip
    assert not failures, "\n\n".join(failures)
    assert len(runnable) >= 20
