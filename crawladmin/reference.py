"""The references of the user guide, read from the code rather than written twice: every setting (from the
one settings table, crawladmin.settings_env, with its words in crawladmin.settings_help), every command and option
(from the commands' own parsers) and the YAML configuration's keys (from crawladmin.configfile.keys).

`manage.py reference --out docs/reference` writes them as Markdown (`make docs` runs it before building the
site); `manage.py help` prints the commands with their one-line purpose. tests/test_reference.py fails when a
setting, command or option has no help text.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path

from crawler.config import Env

# The apps whose commands are this project's (Django's own and third parties' are documented by them).
PROJECT_APPS = ("crawladmin", "crawlcore", "monitoring", "alerts", "dashboard", "reports", "ranking", "analyzer",
                "archive", "search", "testweb")  # fmt: skip
# Options every Django command has; the reference names them once instead of under every command.
DJANGO_COMMON = {"help", "version", "verbosity", "settings", "pythonpath", "traceback", "no_color", "force_color",
                 "skip_checks"}  # fmt: skip


@dataclass(frozen=True)
class Setting:
    name: str
    kind: str
    default: object
    minimum: object = None
    maximum: object = None
    choices: tuple = ()
    help: str = ""


class _Recorder(Env):
    """An environment that notes every setting read, with its type, default and range, in the order read."""

    def __init__(self, values):
        super().__init__(values)
        object.__setattr__(self, "seen", {})

    def _note(self, name: str, kind: str, default, **extra) -> None:
        self.seen.setdefault(name, {"kind": kind, "default": default, **extra})

    def str(self, name, default):
        self._note(name, "text", default)
        return super().str(name, default)

    def number(self, name, default, *, minimum=0.0, maximum=None):
        self._note(name, "number", default, minimum=minimum, maximum=maximum)
        return super().number(name, default, minimum=minimum, maximum=maximum)

    def integer(self, name, default, *, minimum=0, maximum=None):
        self._note(name, "integer", default, minimum=minimum, maximum=maximum)
        return super().integer(name, default, minimum=minimum, maximum=maximum)

    def boolean(self, name, default):
        self._note(name, "boolean", default)
        return super().boolean(name, default)

    def choice(self, name, default, choices):
        self._note(name, "choice", default, choices=tuple(choices))
        return super().choice(name, default, choices)

    def cidrs(self, name):
        self._note(name, "networks", "")
        return super().cidrs(name)

    def url(self, name, default, schemes):
        self._note(name, "URL", default, choices=tuple(s + "://" for s in schemes))
        return super().url(name, default, schemes)


def settings_table() -> list[Setting]:
    """Every setting the settings module reads, as declared there (single sign-on's too, which are read only
    when it is on: the recorder turns it on with placeholder values, and records the declared defaults)."""
    from crawladmin import settings_env
    from crawladmin.settings_help import HELP

    sso = {"OIDC_RP_CLIENT_ID": "x", "OIDC_RP_CLIENT_SECRET": "x"}
    sso.update({name: "https://idp.invalid/x" for name in settings_env._OIDC_ENDPOINTS})
    recorder = _Recorder(sso)
    saved = settings_env.env
    settings_env.env = recorder
    try:
        settings_env._load()
    finally:
        settings_env.env = saved
    base = str(settings_env.BASE_DIR)
    rows = []
    for name, seen in recorder.seen.items():
        default = seen["default"]
        if isinstance(default, str) and base in default:
            default = default.replace(base, ".")
        rows.append(
            Setting(
                name=name,
                kind=seen["kind"],
                default=default,
                minimum=seen.get("minimum"),
                maximum=seen.get("maximum"),
                choices=seen.get("choices", ()),
                help=HELP.get(name, ""),
            )  # fmt: skip
        )
    return rows


@dataclass(frozen=True)
class Option:
    flags: str
    help: str
    default: object = None
    choices: tuple = ()


@dataclass(frozen=True)
class Command:
    name: str
    app: str
    help: str
    usage: str
    options: list[Option] = field(default_factory=list)


def purpose(help_text: str) -> str:
    """A command's one-line purpose: its help's first sentence, without a leading usage line."""
    text = " ".join(help_text.split())
    if text.startswith("`") and "`: " in text:
        text = text.split("`: ", 1)[1]
    first = text.split(". ", 1)[0].rstrip(".")
    return first[:1].upper() + first[1:] + ("." if first else "")


def _options(parser: argparse.ArgumentParser, prefix: str = "") -> list[Option]:
    out = []
    for action in parser._actions:
        if action.dest in DJANGO_COMMON:
            continue
        if isinstance(action, argparse._SubParsersAction):
            helps = {a.dest: a.help or "" for a in action._choices_actions}
            for sub, subparser in action.choices.items():
                out.append(Option(flags=f"{prefix}{sub}", help=helps.get(sub, "") or (subparser.description or "")))
                out.extend(_options(subparser, prefix=f"{prefix}{sub} "))
            continue
        flags = ", ".join(action.option_strings) or action.metavar or action.dest
        if isinstance(flags, tuple):
            flags = " ".join(flags)
        default = None if action.default in (None, argparse.SUPPRESS, False) else action.default
        choices = tuple(action.choices) if action.choices else ()
        out.append(Option(flags=f"{prefix}{flags}", help=(action.help or "").strip(), default=default, choices=choices))
    return out


def commands_table() -> list[Command]:
    """This project's management commands with their purpose and every option, read from their parsers."""
    from django.core.management import get_commands, load_command_class

    rows = []
    for name, app in sorted(get_commands().items()):
        if app.rsplit(".", 1)[-1] not in PROJECT_APPS:
            continue
        command = load_command_class(app, name)
        parser = command.create_parser("manage.py", name)
        usage = parser.format_usage().replace("usage: ", "", 1).strip()
        rows.append(Command(name=name, app=app.rsplit(".", 1)[-1], help=(command.help or "").strip(), usage=usage,
                            options=_options(parser)))  # fmt: skip
    return rows


def config_keys() -> list[tuple[str, tuple[str, ...]]]:
    """The YAML configuration's sections and the keys each entry may have, as `apply` checks them."""
    from crawladmin.configfile.keys import reference_sections

    return [(section, tuple(keys)) for section, keys in reference_sections()]


# -- Markdown ----------------------------------------------------------------------------------------------
def _cell(text: object) -> str:
    return str(text).replace("|", "\\|").replace("\n", " ")


def _value(value: object) -> str:
    if value is None or value == "":
        return "unset"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return f"`{value}`"


def _range(s: Setting) -> str:
    if s.choices:
        return ", ".join(f"`{c}`" for c in s.choices)
    if s.minimum is None and s.maximum is None:
        return ""
    low = "" if s.minimum is None else f"{s.minimum:g}"
    high = "" if s.maximum is None else f"{s.maximum:g}"
    return f"{low} – {high}".strip(" –") if high else f"≥ {low}"


def settings_markdown() -> str:
    lines = [
        "# Settings reference",
        "",
        "Generated from the settings module by `manage.py reference`; do not edit by hand.",
        "",
        "Every setting comes from the environment; with none set, the embedded default runs. A bad value stops",
        "the start with one line naming the variable and no traceback (`bad setting: CRAWL_HEADER_TIMEOUT='ten':",
        "expected a number`); numbers are range-checked, and no variable may hold a control character.",
        "",
        "| setting | type | default | range | what it does |",
        "| --- | --- | --- | --- | --- |",
    ]
    for s in settings_table():
        lines.append(f"| `{s.name}` | {s.kind} | {_cell(_value(s.default))} | {_cell(_range(s))} | {_cell(s.help)} |")
    return "\n".join(lines) + "\n"


def commands_markdown() -> str:
    rows = commands_table()
    lines = [
        "# Commands reference",
        "",
        "Generated from the commands' own parsers by `manage.py reference`; do not edit by hand. Run each as",
        "`.venv/bin/python manage.py NAME …`; `manage.py help` lists them, `manage.py NAME --help` shows one.",
        "Every command also takes Django's common options (`--settings`, `--traceback`, `-v`, …).",
        "",
        "| command | what it does |",
        "| --- | --- |",
    ]
    lines += [f"| [`{c.name}`](#{c.name}) | {_cell(purpose(c.help))} |" for c in rows]
    for c in rows:
        lines += ["", f"## {c.name}", "", c.help, "", "```text", c.usage, "```", ""]
        if c.options:
            lines += ["| option | what it does | default |", "| --- | --- | --- |"]
            for o in c.options:
                extra = f" (one of {', '.join(map(str, o.choices))})" if o.choices and len(o.choices) < 12 else ""
                default = _value(o.default) if o.default is not None else ""
                lines.append(f"| `{_cell(o.flags)}` | {_cell(o.help)}{_cell(extra)} | {_cell(default)} |")
    return "\n".join(lines) + "\n"


def config_markdown() -> str:
    lines = [
        "# Configuration file reference",
        "",
        "Generated from the checks `manage.py apply` makes, by `manage.py reference`; do not edit by hand.",
        "The file is YAML; each top-level key is a list of entries, each entry a mapping of these keys.",
        "A key an entry leaves out keeps its current value (or takes its default on a new object).",
        "",
        "| section | keys |",
        "| --- | --- |",
    ]
    lines += [f"| `{section}` | {', '.join(f'`{k}`' for k in keys)} |" for section, keys in config_keys()]
    return "\n".join(lines) + "\n"


def reference_write(out: Path) -> list[Path]:
    out.mkdir(parents=True, exist_ok=True)
    written = []
    for name, text in (("settings.md", settings_markdown()), ("commands.md", commands_markdown()),
                       ("configuration.md", config_markdown())):  # fmt: skip
        path = out / name
        path.write_text(text, encoding="utf-8")
        written.append(path)
    return written


def commands_listing() -> str:
    """`manage.py help`: every command of this project with its one-line purpose, by app."""
    rows = commands_table()
    width = max(len(c.name) for c in rows) + 2
    lines = ["Usage: manage.py COMMAND [options]   (manage.py COMMAND --help for one command's options)", ""]
    for app in sorted({c.app for c in rows}):
        lines.append(f"[{app}]")
        for c in rows:
            if c.app == app:
                lines.append(f"  {c.name.ljust(width)}{purpose(c.help)}")
        lines.append("")
    lines.append("Django's own commands (migrate, createsuperuser, shell, …): manage.py help --commands")
    return "\n".join(lines)
