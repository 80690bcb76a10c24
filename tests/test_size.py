"""Product code stays readable at once: no module over MAX_LINES lines and no function over MAX_COMPLEXITY
(cyclomatic: 1 + each branch, loop, handler, conditional expression, extra operand of `and`/`or`, and `for`/`if`
of a comprehension; a nested function counts on its own). What passes today is listed below with its figure,
a ceiling that may only come down: a listed place that grows fails, and one that drops under the limit must
leave the list."""

from __future__ import annotations

import ast
from pathlib import Path

from .test_layers import CHAIN

ROOT = Path(__file__).resolve().parent.parent
MAX_LINES = 500
MAX_COMPLEXITY = 15

# Modules over the size: path -> lines today.
LONG_MODULES: dict[str, int] = {
    # none today: keep it so
}
# Functions over the complexity: "path:qualified name" -> complexity today.
COMPLEX_FUNCTIONS: dict[str, int] = {
    "crawlcore/db/bulk.py:insert_new": 30,
    "monitoring/services/monitors.py:monitor_add": 28,
    "crawlcore/services/job_admission.py:jobs_admit": 27,
    "ranking/edges.py:read_edges": 27,
    "crawladmin/configfile/export.py:config_export": 26,
    "scheduling/sim_hybrid.py:simulate": 26,
    "crawladmin/configfile/plan_monitors.py:_plan_monitors": 25,
    "crawlcore/services/render.py:pages_render_flag": 24,
    "crawlcore/services/urls.py:urls_insert": 24,
    "crawladmin/management/commands/crawl.py:Command.handle": 23,
    "crawlcore/db/params.py:array_param": 23,
    "reports/selectors.py:redirect_verdicts": 23,
    "crawlcore/db/chain.py:_one_statement": 22,
    "crawler/hosthealth.py:summary": 22,
    "monitoring/quorum.py:quorum_decide": 22,
    "alerts/services/channels.py:channel_add": 21,
    "crawlcore/db/bulk.py:insert_plain": 21,
    "monitoring/rdap.py:answer_parse": 21,
    "dashboard/bulk.py:bulk_apply": 20,
    "monitoring/services/domains.py:domains_refresh": 20,
    "monitoring/services/evidence.py:evidence_record": 20,
    "monitoring/assertions.py:assertion_failure": 19,
    "ranking/convert.py:convert": 19,
    "crawladmin/configfile/prune.py:_plan_prune": 18,
    "crawlcore/db/chain.py:_step_by_step": 18,
    "crawlcore/services/schedule.py:schedule_table": 18,
    "crawler/parse.py:_collect_links": 18,
    "monitoring/evidence.py:difference": 18,
    "monitoring/server_list.py:parse_server_row": 18,
    "monitoring/services/check_http.py:fetch_http": 18,
    "monitoring/services/monitors.py:_monitor_update": 18,
    "archive/management/commands/export_warc.py:Command.handle": 17,
    "crawlcore/db/arrays.py:_pg_refill": 17,
    "crawlcore/roles.py:refusal": 17,
    "crawler/curl_failures.py:_classify": 17,
    "crawler/curl_result.py:_timings": 17,
    "monitoring/kinds/dns.py:dns_check": 17,
    "monitoring/services/incidents.py:incidents_from_changes": 17,
    "alerts/services/outbox.py:events_from_changes": 16,
    "analyzer/synthetic.py:synthetic_pages": 16,
    "crawladmin/api_auth.py:errors": 16,
    "crawlcore/db/bulk.py:update_by_id": 16,
    "crawlcore/services/extract.py:pages_text_fill": 16,
    "crawlcore/services/urls.py:urls_transition": 16,
    "crawler/fetch_failures.py:_classify": 16,
    "crawler/render_need.py:render_reason": 16,
    "monitoring/kinds/tcp.py:tcp_check": 16,
}


def _product_files() -> list[Path]:
    packages = [p for level in CHAIN for p in level]
    return sorted(f for p in packages for f in (ROOT / p).rglob("*.py") if "migrations" not in f.parts)


def complexity(node: ast.AST) -> int:
    """Cyclomatic complexity of one function's own body (nested functions and classes left out)."""
    count = 1
    stack = list(ast.iter_child_nodes(node))
    while stack:
        child = stack.pop()
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda | ast.ClassDef):
            continue
        if isinstance(child, ast.If | ast.IfExp | ast.For | ast.AsyncFor | ast.While | ast.ExceptHandler):
            count += 1
        elif isinstance(child, ast.BoolOp):
            count += len(child.values) - 1
        elif isinstance(child, ast.comprehension):
            count += 1 + len(child.ifs)
        elif isinstance(child, ast.match_case):
            count += 1
        stack.extend(ast.iter_child_nodes(child))
    return count


def _functions(tree: ast.AST, prefix: str = "") -> list[tuple[str, ast.AST]]:
    out = []
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            out.append((prefix + node.name, node))
            out += _functions(node, f"{prefix}{node.name}.")
        elif isinstance(node, ast.ClassDef):
            out += _functions(node, f"{prefix}{node.name}.")
        else:
            out += _functions(node, prefix)
    return out


def measure() -> tuple[dict[str, int], dict[str, int]]:
    long, complex_ = {}, {}
    for path in _product_files():
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(encoding="utf-8")
        lines = len(text.splitlines())
        if lines > MAX_LINES:
            long[rel] = lines
        for name, node in _functions(ast.parse(text, rel)):
            score = complexity(node)
            if score > MAX_COMPLEXITY:
                complex_[f"{rel}:{name}"] = score
    return long, complex_


def test_no_module_grows_past_its_size():
    long, _ = measure()
    grown = {k: v for k, v in long.items() if v > LONG_MODULES.get(k, MAX_LINES)}
    stale = {k: v for k, v in LONG_MODULES.items() if k not in long}
    assert grown == {}, "split these modules (or, if it had to, raise the figure in LONG_MODULES)"
    assert stale == {}, "these modules are short enough now: take them off LONG_MODULES"


def test_no_function_grows_past_its_complexity():
    _, complex_ = measure()
    grown = {k: v for k, v in complex_.items() if v > COMPLEX_FUNCTIONS.get(k, MAX_COMPLEXITY)}
    stale = {k: v for k, v in COMPLEX_FUNCTIONS.items() if k not in complex_}
    assert grown == {}, "split these functions into named steps"
    assert stale == {}, "these functions are simple enough now: take them off COMPLEX_FUNCTIONS"


def test_the_measure_counts_branches_loops_and_conditions():
    source = "def f(x):\n    if x and y or z:\n        return [a for a in x if a]\n    while x:\n        pass\n"
    tree = ast.parse(source)
    assert complexity(tree.body[0]) == 1 + 1 + 2 + 2 + 1
