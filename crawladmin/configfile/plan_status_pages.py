"""Planning the file's public status pages: each named by its slug and showing one server group, so the
role rules are those of the page's group as it is (a page moved to another group is checked as it stands)."""

from __future__ import annotations

from crawladmin.configfile.keys import STATUS_PAGE_KEYS
from crawladmin.configfile.plan import Plan, _cleaned, _entries, _plan_item, _start, _upsert
from dashboard.models import StatusPage

STATUS_PAGE_FIELDS = ("group", "title", "enabled", "show_addresses")


def _plan_status_pages(items: list, lines, plan: Plan) -> None:
    seen: set[str] = set()
    for item, where in _entries(items, lines, plan, "status_pages", STATUS_PAGE_KEYS,
                                "must be a mapping with slug and group"):  # fmt: skip
        slug = item.get("slug")
        existing = StatusPage.objects.filter(slug=slug).first() if isinstance(slug, str) else None
        group = existing.group if existing else str(item.get("group") or "")
        if not where.allowed("update" if existing else "create", "status_page", group=group, key="slug"):
            continue
        page = StatusPage(slug=slug if isinstance(slug, str) else "",
                          **_start(StatusPage, existing, STATUS_PAGE_FIELDS, item))  # fmt: skip
        if not _cleaned(page, where):
            continue
        if page.slug in seen:
            where.problem("slug", f"{page.slug!r} is named twice")
            continue
        seen.add(page.slug)
        given = {k: getattr(page, k) for k in STATUS_PAGE_FIELDS if k in item}
        create = {"slug": page.slug, **{k: getattr(page, k) for k in STATUS_PAGE_FIELDS}}

        def write(dry: bool, changes: list[str], given=given, create=create) -> str:
            existing = StatusPage.objects.filter(slug=create["slug"]).first()
            return _upsert(StatusPage, existing, given, create, dry, changes)

        _plan_item(plan, "status_page", page.slug, write)
