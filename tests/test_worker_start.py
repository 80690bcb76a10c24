"""What a worker process holds before its first task: the task modules, not the web app."""

from __future__ import annotations

import subprocess
import sys

from .crawlcheck import ROOT, clean_env

LOAD_AS_A_WORKER = """
import sys
from crawladmin.celery import app
app.loader.import_default_modules()  # what `celery worker` does at start, Celery's Django fix-up included
assert 'tasks.load' in sys.modules and 'tasks.extract' in sys.modules
print(" ".join(m for m in ("crawladmin.urls", "dashboard.views", "rest_framework.templatetags.rest_framework")
               if m in sys.modules))
"""


def test_a_worker_loads_its_tasks_without_the_url_conf_views_or_template_tags():
    env = clean_env()
    env.pop("CELERY_SKIP_CHECKS", None)
    proc = subprocess.run([sys.executable, "-c", LOAD_AS_A_WORKER], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.strip() == ""


def test_a_parse_process_imports_no_html_library_but_lxml_until_a_page_needs_its_charset_guessed():
    code = (
        "import sys; from crawler.read import read_answer; import crawler.child_pool; "
        "before = 'bs4' in sys.modules; "
        "page = '<meta charset=\"windows-1251\"><title>\\u041f\\u0440\\u0438</title>'.encode('cp1251'); "
        "ex = read_answer((__import__('zlib').compress(page), 'http://a.test/', 'text/html')); "
        "print(before, 'bs4' in sys.modules, ex.title)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean_env(), capture_output=True, text=True,
                          timeout=60)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.split() == ["False", "True", "При"]
