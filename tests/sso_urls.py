"""The single sign-on URLs alone, for the tests' logins: crawladmin.urls adds them only when
OIDC_RP_CLIENT_ID was set at start, and the tests' process starts without it."""

from __future__ import annotations

from django.urls import include, path

urlpatterns = [path("oidc/", include("mozilla_django_oidc.urls"))]
