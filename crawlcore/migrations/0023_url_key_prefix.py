"""Url.url_hash becomes the URL's first 48 characters followed by the sha1 it held (crawler.urlnorm.url_hash),
so the unique index keeps a server's URLs together. Existing rows are rekeyed in place: the digest is
kept and the URL's prefix put in front of it, in SQL, a batch of ids per transaction (a frontier of millions
is not locked whole). Run it with the workers stopped: a URL inserted by an old worker during the
migration would keep a digest-only key that the new code does not find.

Each batch only touches keys in the other form (a digest-only key is 40 characters, a prefixed one longer),
so a migration stopped half-way can be run again; backwards takes the digest back off."""

from django.db import migrations, models
from django.db.models import F
from django.db.models.functions import Concat, Left, Length, Right

PREFIX = 48  # crawler.urlnorm.URL_KEY_PREFIX when this was written; a later change needs its own migration
DIGEST = 40  # sha1, hex
BATCH = 50_000  # ids per UPDATE and transaction


def _batches(Url):
    bounds = Url.objects.aggregate(lo=models.Min("id"), hi=models.Max("id"))
    if bounds["lo"] is None:
        return
    for start in range(bounds["lo"], bounds["hi"] + 1, BATCH):
        yield Url.objects.filter(id__gte=start, id__lt=start + BATCH)


def prefix_keys(apps, schema_editor):
    Url = apps.get_model("crawladmin", "Url")
    for rows in _batches(Url):
        rows.alias(n=Length("url_hash")).filter(n=DIGEST).update(url_hash=Concat(Left("url", PREFIX), F("url_hash")))


def digest_keys(apps, schema_editor):
    Url = apps.get_model("crawladmin", "Url")
    for rows in _batches(Url):
        rows.alias(n=Length("url_hash")).filter(n__gt=DIGEST).update(url_hash=Right("url_hash", DIGEST))


class Migration(migrations.Migration):
    atomic = False  # one transaction a batch

    dependencies = [
        ("crawladmin", "0022_page_fulltext"),
    ]

    operations = [
        migrations.AlterField(
            model_name="url",
            name="url_hash",
            field=models.CharField(help_text="The canonical URL's first 48 characters, then its sha1", max_length=88),
        ),
        migrations.RunPython(prefix_keys, digest_keys),
    ]
