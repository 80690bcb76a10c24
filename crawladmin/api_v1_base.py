"""What every view of the REST API /api/v1/ shares: the one paging, the one error body, the group limits,
and the schema's description of both (crawladmin.api_v1 and its siblings use these).

- Paging: `?limit=` (default PAGE_DEFAULT, at most MAX_PAGE) and `?offset=`; a list answers
  `{"count", "limit", "offset", "<resource>": [...]}`.
- Errors: `{"error", "detail", "fields"}` (crawladmin.api_auth.errors), 400/401/403/404/405.
"""

from __future__ import annotations

from django.db import transaction
from django.http import JsonResponse
from django.views.decorators.csrf import csrf_exempt
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import exceptions, serializers
from rest_framework.response import Response

from crawladmin.api_auth import may_write
from crawladmin.configfile.apply import config_plan
from crawlcore import roles
from crawlcore.access import server_groups_of

MAX_PAGE = 1000
PAGE_DEFAULT = 100
MAX_OFFSET = 10**12  # past any table's rows; a bigger number is a mistake (and SQLite cannot bind it)

PAGE_PARAMETERS = [
    OpenApiParameter("limit", int, description=f"Rows in the page: 0 to {MAX_PAGE}, default {PAGE_DEFAULT}"),
    OpenApiParameter("offset", int, description="Rows skipped from the start"),
]


class Invalid(exceptions.ValidationError):
    def __init__(self, fields: dict[str, str]):
        super().__init__({k: [v] for k, v in fields.items()})


def body_of(request) -> dict:
    if not isinstance(request.data, dict):
        raise Invalid({"non_field_errors": "the body must be a JSON object"})
    return dict(request.data)


def page_of(request) -> tuple[int, int]:
    try:
        limit = int(request.query_params.get("limit", PAGE_DEFAULT))
        offset = int(request.query_params.get("offset", 0))
    except ValueError:
        raise Invalid({"limit": "limit and offset must be whole numbers"}) from None
    if not (0 <= limit <= MAX_PAGE) or not (0 <= offset <= MAX_OFFSET):
        raise Invalid({"limit": f"limit from 0 to {MAX_PAGE}, offset from 0 to {MAX_OFFSET}"})
    return limit, offset


def listed(request, qs, key: str, form, *, context: dict | None = None, rows=None) -> Response:
    """One page of `qs` in its form. `rows(page)`, when given, turns the page's objects into the list."""
    limit, offset = page_of(request)
    page = list(qs[offset : offset + limit])
    items = rows(page) if rows is not None else form(page, many=True, context=context or {}).data
    return Response({"count": qs.count(), "limit": limit, "offset": offset, key: items})


def page_schema(key: str, form) -> serializers.Serializer:
    """The schema of a list's answer: the paging keys and the page under `key`."""
    name = "".join(part.title() for part in key.replace("-", "_").split("_")) + "Page"
    return inline_serializer(name, fields={"count": serializers.IntegerField(), "limit": serializers.IntegerField(),
                                           "offset": serializers.IntegerField(), key: form(many=True)})  # fmt: skip


def list_schema(key: str, form, *parameters: OpenApiParameter):
    """The schema of a list: its paging parameters (and `parameters`), its answer, its operation's name."""
    return extend_schema(operation_id=f"{key}_list", parameters=[*parameters, *PAGE_PARAMETERS],
                         responses=page_schema(key, form))  # fmt: skip


def groups_of(request) -> frozenset[str] | None:
    return server_groups_of(request.user)


def check_group(request, group: str, *, action: str = "update", obj: str = "server") -> None:
    """The role rules (crawlcore.roles) for `action` on an `obj` of this server group: a 403 with the reason."""
    reason = roles.refusal(request.user, action, obj, group=group)
    if reason is not None:
        raise exceptions.PermissionDenied(reason)


def in_groups(request, qs, *paths: str):
    """`qs` cut to the reader's server groups, each row reaching a group through any of `paths`."""
    from django.db.models import Q

    allowed = groups_of(request)
    if allowed is None:
        return qs
    q = Q(pk__in=[])
    for path in paths:
        q |= Q(**{f"{path}__in": sorted(allowed)})
    return qs.filter(q)


def apply_one(section: str, item: dict, request) -> None:
    """Write one object through the configuration file's plan: the same checks, the same role rules for the
    request's user (crawlcore.roles), the same write."""
    with transaction.atomic():
        plan = config_plan({section: [item]}, {}, actor=request.user)
        if plan.refused:
            raise exceptions.PermissionDenied(plan.refused)
        if plan.problems:
            raise Invalid(plan.fields)
        for planned in plan.items:
            planned.write(False)


def writer_context(request, **extra) -> dict:
    return {"may_write": may_write(request.user), **extra}


class ErrorSerializer(serializers.Serializer):
    """Every error's body."""

    error = serializers.CharField(help_text="bad request, unauthorized, forbidden, not found, method not allowed")
    detail = serializers.CharField()
    fields = serializers.DictField(child=serializers.CharField(), help_text="What was wrong with each key")


@csrf_exempt  # it writes nothing; a PATCH to a wrong address is a 404, not the CSRF page
def not_found(request, *args, **kwargs) -> JsonResponse:
    """An address under /api/ that names no resource (a path id that is no number, say): the error body."""
    body = {"error": "not found", "detail": f"no resource at {request.path[:200]} (the index: /api/v1/)", "fields": {}}
    return JsonResponse(body, status=404)
