"""The user guide at /guide/: the static site `make docs` builds (MkDocs, its pages as FOLDER/index.html), so
the dashboard's "?" links work on the machine that serves the dashboard. Read-only files; no login, since the
guide holds nothing that is not in the repository."""

from __future__ import annotations

from pathlib import Path

from django.conf import settings
from django.core.exceptions import SuspiciousFileOperation
from django.http import Http404, HttpRequest, HttpResponse
from django.views.static import serve

NOT_BUILT = """<!doctype html><meta charset="utf-8"><title>The user guide is not built here</title>
<p>The user guide is not built on this machine: <code>make docs</code> builds it into <code>var/site/</code>,
and this address serves it. Its pages are also readable as Markdown in the repository's <code>docs/</code>.</p>"""


def guide(request: HttpRequest, path: str = "") -> HttpResponse:
    root = Path(settings.GUIDE_SITE_DIR)
    if not (root / "index.html").is_file():
        # Every page's "?" link lands here on a machine where the guide was not built: a page that says how
        # to build it (and where else to read it), not a dead link.
        return HttpResponse(NOT_BUILT)
    if path == "" or path.endswith("/"):
        path += "index.html"
    try:
        return serve(request, path, document_root=str(root))
    except (Http404, SuspiciousFileOperation):  # no such file, or a path out of the site's folder
        raise Http404("no such page in the user guide") from None
