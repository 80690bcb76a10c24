"""The admin's page for freshness objectives: checked and saved by the one freshness service
(crawlcore.services.freshness), as `manage.py apply` and the API save them, with each objective's figures
now (crawlcore.selectors_freshness). Held to the role rules of crawl jobs, scoped to the reader's groups."""

from __future__ import annotations

from django import forms
from django.contrib import admin

from .admin_base import ReaderScopedAdmin
from .models import FreshnessObjective
from .selectors_freshness import objective_status
from .services.freshness import freshness_check, freshness_delete, freshness_save


class FreshnessForm(forms.ModelForm):
    site_origin = forms.CharField(required=False, help_text="The site's origin, e.g. https://www.example.org")
    job_name = forms.CharField(required=False, help_text="Or the name of a crawl job")

    class Meta:
        model = FreshnessObjective
        fields = ["name", "pages", "target", "budget"]

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        obj = self.instance
        if obj.pk:
            self.fields["site_origin"].initial = obj.site.origin if obj.site_id else ""
            self.fields["job_name"].initial = obj.job.name if obj.job_id else ""

    def spec(self) -> dict:
        data = self.cleaned_data
        spec = {k: data.get(k) for k in ("name", "pages", "target", "budget")}
        spec["site"], spec["job"] = data.get("site_origin") or None, data.get("job_name") or None
        return spec

    def clean(self):
        data = super().clean()
        _, problems = freshness_check(self.spec())
        for key, message in problems.items():
            field = {"site": "site_origin", "job": "job_name"}.get(key, key)
            self.add_error(field if field in self.fields else None, message)
        return data


@admin.register(FreshnessObjective)
class FreshnessObjectiveAdmin(ReaderScopedAdmin):
    form = FreshnessForm
    group_paths = ("site__group", "job__group")
    role_object = "job"  # an objective spends a site's or a job's requests: the crawl jobs' rules
    list_display = ("name", "scope_name", "pages", "target", "budget", "p95_now")
    search_fields = ("name",)

    @admin.display(description="p95 staleness now (s)")
    def p95_now(self, obj: FreshnessObjective):
        return objective_status(obj, with_hours=False)["p95_staleness_s"]

    def save_model(self, request, obj: FreshnessObjective, form, change: bool) -> None:
        if change and obj.pk:  # renamed: the service keys objectives by name, so the row takes the new one first
            FreshnessObjective.objects.filter(pk=obj.pk).update(name=form.spec()["name"])
        freshness_save(spec=form.spec())
        saved = FreshnessObjective.objects.get(name=form.spec()["name"])
        obj.pk, obj.site_id, obj.job_id = saved.pk, saved.site_id, saved.job_id

    def delete_model(self, request, obj: FreshnessObjective) -> None:
        freshness_delete(name=obj.name)
