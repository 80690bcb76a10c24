"""Url.url_hash becomes 24 characters (crawler.urlnorm.url_hash): the base64 of a 4-byte digest of the URL's
origin, a 2-byte digest of its first directory and a 12-byte digest of the whole URL, instead of the URL's
first 48 characters and its hex sha1 (migration 0023). Still unique and sorted by server and directory, about a
quarter of the size in the table and in its unique index.

Existing rows are rekeyed in batches of ids, one transaction a batch (a frontier of millions is not locked
whole), the keys computed here in Python; then the column is narrowed, which on PostgreSQL rewrites the table
and its indexes once and so also gives back the room the rekeyed rows' old versions took. Run it with the
workers stopped: a URL inserted by an old worker during the migration would keep a key the new code does not
find. Each batch only touches keys of the other form (an old key is 40 characters or more, a new one 24), so a
migration stopped half-way can be run again; backwards puts the old keys back.

The key functions are written out here, not imported: a later change of crawler.urlnorm.url_hash needs its own
migration, and this one must go on computing the keys it was written for."""

import binascii
import hashlib

from django.db import migrations, models, transaction
from django.db.models.functions import Length

BATCH = 20_000  # ids per read, UPDATE and transaction
NEW_LENGTH = 24
OLD_PREFIX = 48


def _new_key(url: str) -> str:
    path = url.find("/", url.find("://") + 3)
    if path < 0:
        head = url.partition("?")[0]
    else:
        end = url.find("/", path + 1)
        query = url.find("?", path + 1)
        head = url[:path] if end < 0 or 0 <= query < end else url[:end]
    start = head.find("://") + 3
    slash = head.find("/", start)
    origin, directory = (head, "") if slash < 0 else (head[:slash], head[slash:])
    raw = hashlib.blake2b(origin.encode("utf-8"), digest_size=4).digest()
    raw += hashlib.blake2b(directory.encode("utf-8"), digest_size=2).digest()
    raw += hashlib.blake2b(url.encode("utf-8"), digest_size=12).digest()
    return binascii.b2a_base64(raw, newline=False).decode("ascii")


def _old_key(url: str) -> str:
    return url[:OLD_PREFIX] + hashlib.sha1(url.encode("utf-8")).hexdigest()


def _rekey(apps, schema_editor, *, key, todo):
    Url = apps.get_model("crawladmin", "Url")
    connection = schema_editor.connection
    table = connection.ops.quote_name(Url._meta.db_table)
    bounds = Url.objects.aggregate(lo=models.Min("id"), hi=models.Max("id"))
    if bounds["lo"] is None:
        return
    for start in range(bounds["lo"], bounds["hi"] + 1, BATCH):
        batch = Url.objects.filter(id__gte=start, id__lt=start + BATCH).alias(n=Length("url_hash"))
        rows = batch.filter(todo).values_list("id", "url")
        pairs = [(pk, key(url)) for pk, url in rows]
        if not pairs:
            continue
        # One transaction a batch, also where a statement is not one (SQLite: one UPDATE a row, each its own
        # commit in a migration that is not atomic).
        with transaction.atomic(using=connection.alias), connection.cursor() as cur:
            if connection.vendor == "postgresql":
                ids, keys = zip(*pairs, strict=True)
                cur.execute(
                    f"UPDATE {table} AS u SET url_hash = k.key"
                    " FROM unnest(%s::bigint[], %s::text[]) AS k(id, key) WHERE u.id = k.id",
                    [list(ids), list(keys)],
                )
            else:
                cur.executemany(f"UPDATE {table} SET url_hash = %s WHERE id = %s", [(k, pk) for pk, k in pairs])


def compact_keys(apps, schema_editor):
    _rekey(apps, schema_editor, key=_new_key, todo=~models.Q(n=NEW_LENGTH))


def prefixed_keys(apps, schema_editor):
    _rekey(apps, schema_editor, key=_old_key, todo=models.Q(n=NEW_LENGTH))


class Migration(migrations.Migration):
    atomic = False  # one transaction a batch

    dependencies = [
        ("crawladmin", "0025_url_server_no_db_constraint"),
    ]

    operations = [
        migrations.RunPython(compact_keys, prefixed_keys),
        migrations.AlterField(
            model_name="url",
            name="url_hash",
            field=models.CharField(
                help_text="Base64 of digests of the canonical URL's origin, first directory and whole",
                max_length=24,
            ),
        ),
    ]
