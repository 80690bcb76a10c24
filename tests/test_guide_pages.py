"""The dashboard's pages link their topic in the user guide ("?"), and the web app serves the guide's site
where `make docs` built it."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group, User

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(client):
    user = User.objects.create_user("reader", password="pw-not-secret")
    user.groups.add(Group.objects.get(name="viewer"))
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "path, topic",
    [("/dashboard/", "/guide/dashboard/"), ("/dashboard/dead-links/", "/guide/link-reports/"),
     ("/dashboard/search/", "/guide/search/"), ("/dashboard/uptime/", "/guide/monitoring/")],
)  # fmt: skip
def test_each_page_links_its_topic_in_the_guide(viewer, path, topic):
    html = viewer.get(path).content.decode()
    assert f'href="{topic}" class="guide"' in html


def test_the_guide_is_served_where_make_docs_built_it(client, tmp_path, settings):
    settings.GUIDE_SITE_DIR = tmp_path
    for path in ("/guide/", "/guide/search/"):  # not built: every "?" link says how to build it
        missing = client.get(path)
        assert missing.status_code == 200 and b"make docs" in missing.content
    (tmp_path / "index.html").write_text("<h1>crawladmin</h1>")
    (tmp_path / "search").mkdir()
    (tmp_path / "search" / "index.html").write_text("<h1>Search</h1>")
    assert b"crawladmin" in b"".join(client.get("/guide/").streaming_content)
    assert b"Search" in b"".join(client.get("/guide/search/").streaming_content)
    assert client.get("/guide/nothing-here/").status_code == 404
    assert client.get("/guide/../settings.py").status_code == 404
