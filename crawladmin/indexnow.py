"""The IndexNow endpoint: `POST /indexnow` (JSON {host, key, keyLocation?, urlList}) and `GET /indexnow?url=…&key=…`,
no login (the key file on the site is the proof; crawlcore.services.indexnow). Answers in plain text, with the
protocol's statuses: 200 accepted, 400, 403, 422, 429."""

from __future__ import annotations

import json

from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from crawlcore.services.indexnow import MAX_URLS, Answer, indexnow_push

MAX_BODY = MAX_URLS * 2100  # 10,000 URLs of the protocol's 2,048 characters at most, and the JSON around them


def _answer(answer: Answer) -> HttpResponse:
    text = f"{answer.message} ({answer.accepted} URL(s))\n" if answer.status == 200 else f"{answer.message}\n"
    response = HttpResponse(text, status=answer.status, content_type="text/plain; charset=utf-8")
    if answer.status == 429:
        response["Retry-After"] = "60"
    return response


def _post(request: HttpRequest) -> Answer:
    body = request.read(MAX_BODY + 1)
    if len(body) > MAX_BODY:
        return Answer(413, "the push is larger than the protocol allows")
    try:
        data = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return Answer(400, "the body must be JSON: {host, key, urlList}")
    if not isinstance(data, dict) or not isinstance(data.get("host"), str):
        return Answer(400, "the body must be JSON: {host, key, urlList}")
    location = data.get("keyLocation") if isinstance(data.get("keyLocation"), str) else None
    return indexnow_push(host=data["host"], key=data.get("key"), urls=data.get("urlList"), key_location=location)


@csrf_exempt
@require_http_methods(["GET", "POST"])
def indexnow(request: HttpRequest) -> HttpResponse:
    if request.method == "POST":
        return _answer(_post(request))
    url, key = request.GET.get("url"), request.GET.get("key")
    if not url:
        return _answer(Answer(400, "url and key are required"))
    return _answer(indexnow_push(host=None, key=key, urls=[url], key_location=request.GET.get("keyLocation")))
