"""The OpenAPI 3 schema of /api/v1/ (drf-spectacular): the bearer token as its security scheme, and every
operation's error answers (crawladmin.api_v1_base.ErrorSerializer), so a client, and the fuzzing test, know
every status an operation may answer with. Read by crawladmin.settings (SPECTACULAR_SETTINGS)."""

from __future__ import annotations

from drf_spectacular.extensions import OpenApiAuthenticationExtension

ERRORS = {
    "400": "Bad input: `fields` says what was wrong with each key",
    "401": "No token, or a token that is not valid",
    "403": "Not allowed for this account (a viewer writing, a group outside the account's)",
    "404": "No such object (or not one of the account's groups)",
    "405": "The method is not one of this address's",
}


class BearerTokenScheme(OpenApiAuthenticationExtension):
    target_class = "crawladmin.api_auth.BearerTokenAuthentication"
    name = "bearerToken"

    def get_security_definition(self, auto_schema):
        return {"type": "http", "scheme": "bearer", "description": "A user's token: manage.py api_token USER"}


def error_answers(result, generator, request, public):
    """Postprocessing hook: the Error component, and each error status on every operation."""
    schemas = result.setdefault("components", {}).setdefault("schemas", {})
    schemas["Error"] = {
        "type": "object",
        "properties": {
            "error": {"type": "string"},
            "detail": {"type": "string"},
            "fields": {"type": "object", "additionalProperties": {"type": "string"}},
        },
        "required": ["error", "detail", "fields"],
    }
    ref = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for operations in result.get("paths", {}).values():
        for method, operation in operations.items():
            if method not in ("get", "post", "put", "patch", "delete"):
                continue
            responses = operation.setdefault("responses", {})
            for code, description in ERRORS.items():
                responses.setdefault(code, {"description": description, "content": ref})
    return result
