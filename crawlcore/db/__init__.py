"""Database-specific SQL, in one place: the only code that asks which database it runs on.

The crawl runs on PostgreSQL; the embedded mode (and most unit tests) on SQLite. Everything whose SQL
differs between the two lives here, by concern, and callers ask for what they need, not for a vendor:

* bulk: insert, upsert and update many rows in one round trip (`execute_values` on PostgreSQL);
* arrays: numpy columns in and out of a table (binary COPY on PostgreSQL);
* locks: advisory locks, with every key namespace in one table;
* estimates: cheap row counts;
* transactions: per-transaction settings (a read-only snapshot, a gentle big count);
* chain: a batch's dependent writes, described once: one statement on PostgreSQL, step by step on SQLite;
* raw: hand-written reads returned as dicts, with their times and JSON decoded; the few pieces of a
  hand-written statement whose SQL differs (a typed parameter, a list as one parameter, skipped locks);
* functions: ORM expressions whose SQL differs by database;
* features: what the database can do, for callers whose two paths are domain SQL of their own.

Nothing here imports a model: callers pass models or table names, so the package sits at the bottom of
the crawl core and monitoring, ranking and the dashboard use it alike.
"""
