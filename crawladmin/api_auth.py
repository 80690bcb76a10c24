"""Who may use the REST API /api/v1/ (crawladmin.api_v1) and how its errors look: read by Django REST
framework's settings, so it imports none of the API's views (their class bodies read these settings)."""

from __future__ import annotations

from django.http import Http404
from rest_framework import exceptions, permissions
from rest_framework.authentication import BaseAuthentication, get_authorization_header

from crawlcore import roles
from crawlcore.access import may_read
from dashboard.tokens import api_token_user


class BearerTokenAuthentication(BaseAuthentication):
    """`Authorization: Bearer <token>`, a user's token. A request that offers one is judged by it alone."""

    def authenticate(self, request):
        parts = get_authorization_header(request).split()
        if not parts or parts[0].lower() != b"bearer":
            return None
        if len(parts) != 2:
            raise exceptions.AuthenticationFailed("Authorization: Bearer <token>, one token")
        user = api_token_user(parts[1].decode("ascii", errors="replace"))
        if user is None:
            raise exceptions.AuthenticationFailed("invalid token")
        return user, None

    def authenticate_header(self, request) -> str:
        return 'Bearer realm="crawladmin"'


def may_write(user) -> bool:
    return may_read(user) and (user.is_superuser or user.groups.filter(name="operator").exists())


# The role rules' action (crawlcore.roles) of each method; a view names its object (`role_object`) and, when
# a POST runs something rather than creating it, `post_action = "run"`.
METHOD_ACTIONS = {"GET": "read", "HEAD": "read", "OPTIONS": "read", "POST": "create", "PUT": "update",
                  "PATCH": "update", "DELETE": "delete"}  # fmt: skip


class ReadOrOperate(permissions.BasePermission):
    """The role rules (crawlcore.roles) for the view's object, as the admin and `manage.py apply` apply them;
    the row's server group is checked by the view, which knows the row."""

    message = "for the viewer and operator groups; writing is for operators"

    def has_permission(self, request, view) -> bool:
        if not (request.user and request.user.is_authenticated):
            raise exceptions.NotAuthenticated("send Authorization: Bearer <token> (manage.py api_token USER)")
        obj = getattr(view, "role_object", None)
        if obj is None:
            return may_read(request.user) if request.method in permissions.SAFE_METHODS else may_write(request.user)
        action = METHOD_ACTIONS.get(request.method, "update")
        if action == "create":
            action = getattr(view, "post_action", "create")
        reason = roles.refusal(request.user, action, obj)
        if reason is not None:
            raise exceptions.PermissionDenied(reason)
        return True


def errors(exc, context):
    """Every error as {"error", "detail", "fields"}: the client's mistakes are 4xx with what was wrong."""
    if isinstance(exc, Http404):
        exc = exceptions.NotFound(str(exc) or "not found")
    elif isinstance(exc, OverflowError):
        # A number past any integer column (SQLite raises when binding it): no such row, or a bad parameter.
        kwargs = (context or {}).get("kwargs") or {}
        exc = exceptions.NotFound("no such object") if kwargs else exceptions.ParseError("a number is out of range")
    from rest_framework.views import exception_handler  # here: that module reads the settings naming this one

    response = exception_handler(exc, context)
    if response is None:
        return None
    data = response.data
    fields: dict = {}
    if isinstance(data, dict) and "detail" in data and len(data) == 1:
        detail = str(data["detail"])
    elif isinstance(data, dict):
        fields = {k: (" ".join(map(str, v)) if isinstance(v, list) else str(v)) for k, v in data.items()}
        detail = "; ".join(f"{k}: {v}" for k, v in fields.items())
    else:
        detail = " ".join(map(str, data)) if isinstance(data, list) else str(data)
    names = {400: "bad request", 401: "unauthorized", 403: "forbidden", 404: "not found", 405: "method not allowed"}
    response.data = {"error": names.get(response.status_code, "error"), "detail": detail, "fields": fields}
    return response
