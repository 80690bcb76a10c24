"""Reading the configuration file: YAML into plain data, with the line of each path in it, so every problem
found later (by the planners) can name its line. Bounded in bytes and in values (aliases expanded), and strict
about keys (plain text, each once): the file may come from the REST API, not only from an operator's disk."""

from __future__ import annotations

import yaml

from crawladmin.configfile.keys import SECTIONS

MAX_BYTES = 5 * 1024 * 1024
MAX_NODES = 200_000


class ConfigError(Exception):
    """The file cannot be applied: `problems` are one line each, `FILE:LINE: where: what`."""

    def __init__(self, problems: list[str]):
        super().__init__(f"{len(problems)} problem(s)")
        self.problems = problems


def _plain(node: yaml.Node, path: tuple, lines: dict[tuple, int], loader: yaml.SafeLoader, budget: list[int]):
    budget[0] -= 1
    if budget[0] < 0:
        raise ConfigError([f"{node.start_mark.line + 1}: more than {MAX_NODES} values (aliases expanded)"])
    lines[path] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        out: dict = {}
        for key_node, value_node in node.value:
            key = loader.construct_object(key_node, deep=True)
            if not isinstance(key, str | int | float | bool) or key is None:
                raise ConfigError([f"{key_node.start_mark.line + 1}: a key must be plain text"])
            if key in out:
                raise ConfigError([f"{key_node.start_mark.line + 1}: {key!r} given twice"])
            out[key] = _plain(value_node, (*path, key), lines, loader, budget)
            lines[(*path, key)] = key_node.start_mark.line + 1
        return out
    if isinstance(node, yaml.SequenceNode):
        return [_plain(v, (*path, i), lines, loader, budget) for i, v in enumerate(node.value)]
    return loader.construct_object(node, deep=True)


def config_read(text: str) -> tuple[dict, dict[tuple, int]]:
    """The document and the line of each path in it. Raises ConfigError (lines without the file name)."""
    if len(text.encode("utf-8", errors="replace")) > MAX_BYTES:
        raise ConfigError([f"1: larger than {MAX_BYTES} bytes"])
    loader = yaml.SafeLoader(text)
    try:
        node = loader.get_single_node()
        lines: dict[tuple, int] = {}
        data = {} if node is None else _plain(node, (), lines, loader, [MAX_NODES])
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark is not None else 1
        raise ConfigError([f"{line}: not valid YAML ({exc.problem or exc.context})"]) from None
    except yaml.YAMLError as exc:
        raise ConfigError([f"1: not valid YAML ({exc})"]) from None
    finally:
        loader.dispose()
    if not isinstance(data, dict):
        raise ConfigError([f"1: the file must be a mapping of {', '.join(SECTIONS)}"])
    return data, lines
