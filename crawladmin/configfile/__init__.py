"""Configuration as code: servers, monitors of every kind, alert channels and their rules, recurring
maintenance, mutes, status pages and crawl jobs from one YAML file (`manage.py apply`), and the current
configuration in the same form (`manage.py export_config`). The form of each object is its serializer's
(crawladmin.serializers), the one the REST API answers with; the API's writes go through the plan here.

The whole file is read and checked before anything is written: a problem anywhere is reported with its line
and nothing changes. Then one transaction writes what differs, and each object is reported as `created`,
`changed` (with each `field: old -> new`), `unchanged` or (with prune) `removed`, so a second apply of the
same file changes nothing. A key the file leaves out keeps the object's value (a new object: the default).

Each object is checked by the same rules as the admin's forms (the models' clean(), crawler.jobrules for
jobs). Servers are the crawl's data as much as configuration (the crawl finds most of them): prune never
removes a server; it removes the other objects of the sections the file has that it no longer names.

The steps, a module each: the file's form (keys), reading it with lines (read), the plan and what every
section's planner shares (plan), one planner per section (plan_servers ... plan_jobs), prune, the whole
check and its one transaction (apply), and the export.
"""

from __future__ import annotations
