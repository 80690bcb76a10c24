"""The guide's references are generated from the code, so what they say cannot drift from it; these tests
fail when a setting, a command or an option exists without the words the reference shows for it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from crawladmin.reference import commands_table, reference_write, settings_table
from crawladmin.settings_help import HELP

ROOT = Path(__file__).resolve().parent.parent


def test_every_setting_has_help_text_and_no_help_outlives_its_setting():
    names = [s.name for s in settings_table()]
    assert len(names) > 100
    assert [n for n in names if not HELP.get(n, "").strip()] == []
    assert sorted(set(HELP) - set(names)) == []


def test_every_command_and_option_says_what_it_does():
    commands = commands_table()
    assert {"crawl", "apply", "job", "dead_links", "reference"} <= {c.name for c in commands}
    assert [c.name for c in commands if not c.help.strip()] == []
    assert [(c.name, o.flags) for c in commands for o in c.options if not o.help.strip()] == []


def test_the_reference_names_every_setting_and_command(tmp_path):
    reference_write(tmp_path)
    settings_page = (tmp_path / "settings.md").read_text()
    commands_page = (tmp_path / "commands.md").read_text()
    assert all(f"`{s.name}`" in settings_page for s in settings_table())
    assert all(f"## {c.name}\n" in commands_page for c in commands_table())
    assert "`--max-pages" in commands_page  # an option, read from the crawl command's parser
    config_page = (tmp_path / "configuration.md").read_text()
    assert "`jobs`" in config_page and "`seeds`" in config_page


def test_manage_py_help_lists_every_command_with_its_purpose():
    out = subprocess.run([sys.executable, "manage.py", "help"], cwd=ROOT, capture_output=True, text=True,
                         timeout=120, check=True).stdout  # fmt: skip
    for command in commands_table():
        line = next((ln for ln in out.splitlines() if ln.strip().startswith(command.name + " ")), "")
        assert line.split(None, 1)[1:], f"{command.name} is not listed with its purpose"
