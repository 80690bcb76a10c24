"""The REST API's freshness objectives: `GET /api/v1/freshness/`, each objective the reader may see (those of
a site or job in the reader's server groups) with the figures `manage.py freshness_report` prints
(crawlcore.selectors_freshness). Objectives are written through the configuration file or the admin."""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.response import Response
from rest_framework.views import APIView

from crawlcore.selectors_freshness import FIELDS, objectives_status


class FreshnessRowSerializer(serializers.Serializer):
    objective = serializers.CharField(help_text="The objective's name")
    site = serializers.CharField(help_text="The site's origin, or `job NAME`")
    pages = serializers.CharField(help_text="all, top:N or a path regular expression")
    p50_staleness_s = serializers.FloatField(allow_null=True, help_text="Median staleness of its pages now, seconds")
    p95_staleness_s = serializers.FloatField(allow_null=True, help_text="95th percentile staleness now, seconds")
    target_s = serializers.IntegerField(help_text="The p95 staleness allowed, seconds")
    met = serializers.BooleanField(help_text="p95_staleness_s is within target_s now")
    hours_met_pct = serializers.FloatField(allow_null=True, help_text="Share of recorded hours met, last 30 days")
    budget = serializers.IntegerField(help_text="Requests per server and day it may spend")
    budget_needed = serializers.IntegerField(help_text="Requests per server and day that would hold the target")
    lastmod_honesty = serializers.FloatField(allow_null=True, help_text="Its servers' lowest lastmod honesty, 0-1")
    attainable = serializers.BooleanField(help_text="budget_needed is within budget")


class FreshnessAnswerSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    freshness = FreshnessRowSerializer(many=True)


class FreshnessList(APIView):
    """Each freshness objective the reader may see, now."""

    @extend_schema(responses=FreshnessAnswerSerializer)
    def get(self, request):
        rows = [{k: r[k] for k in (*FIELDS, "attainable")} for r in objectives_status(user=request.user)]
        return Response({"count": len(rows), "freshness": rows})
