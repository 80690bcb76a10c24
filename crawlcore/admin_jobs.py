"""The admin's pages for crawl jobs and their runs: the job's keys checked as `manage.py apply` and the API
check them (crawler.jobrules), its progress, ETA and stalls shown (crawlcore.selectors_jobs), and the
actions start, pause, resume, stop."""

from __future__ import annotations

import json

from django import forms
from django.contrib import admin, messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from crawler.jobrules import JOB_KEYS, job_spec_check

from . import roles
from .admin_base import NamedValuesFilter, ReaderScopedAdmin
from .models import Job, JobRun
from .selectors_jobs import job_definition, job_progress, job_stalled
from .services.job_definitions import job_save
from .services.job_life import JobError, job_pause, job_resume, job_start, job_stop


class LinesField(forms.CharField):
    """A list of strings (seeds, patterns, windows) edited one a line instead of as JSON text."""

    widget = forms.Textarea(attrs={"class": "one-a-line", "rows": 6, "spellcheck": "false"})

    def prepare_value(self, value):
        if isinstance(value, list | tuple):
            return "\n".join(str(v) for v in value)
        return value

    def to_python(self, value) -> list[str]:
        if isinstance(value, list | tuple):
            return [str(v) for v in value]
        text = (value or "").strip()
        if text.startswith("["):  # the JSON list this field took before (scripts, saved forms) still works
            try:
                found = json.loads(text)
            except ValueError:
                found = None
            if isinstance(found, list):
                return [str(v) for v in found]
        return [line.strip() for line in text.splitlines() if line.strip()]


class JobForm(forms.ModelForm):
    seeds = LinesField(help_text="Seed URLs (depth 0), one a line")
    include = LinesField(required=False, help_text="Path patterns (regular expressions) a URL must match, one a line")
    exclude = LinesField(required=False, help_text="Path patterns (regular expressions) that exclude a URL, one a line")
    windows = LinesField(required=False, help_text='Time windows "HH:MM-HH:MM" in the time zone, one a line')
    actor = None  # the user saving it (JobAdmin.get_form): held to the role rules for the job's seeds

    class Meta:
        model = Job
        fields = [k for k in JOB_KEYS]

    def clean(self):
        data = super().clean()
        spec, problems = job_spec_check({k: data.get(k) for k in JOB_KEYS if k in data or k in ("name", "seeds")})
        for key, message in problems.items():
            self.add_error(key if key in self.fields else None, message)
        if "seeds" not in problems and self.actor is not None:
            refused = roles.seeds_refusal(self.actor, spec.get("seeds") or [])
            if refused:
                self.add_error("seeds", refused)
        data.update(spec)
        return data

    def validate_unique(self) -> None:
        try:
            self.instance.validate_unique(exclude=self._get_validation_exclusions())
        except ValidationError:
            # Not "a job named x exists": the name may be another server group's job, not to be told.
            self.add_error("name", "this name cannot be used: choose another")


class JobRunInline(admin.TabularInline):
    model = JobRun
    extra = 0
    can_delete = False
    ordering = ["-started_at"]
    fields = readonly_fields = ("started_at", "ended_at", "trigger", "pages", "failures", "stop_reason")

    def has_add_permission(self, request: HttpRequest, obj=None) -> bool:
        return False


def _each(action, verb: str):
    def run(modeladmin, request: HttpRequest, queryset) -> None:
        for job in queryset:
            try:
                action(name=job.name)
                modeladmin.message_user(request, f"{job.name}: {verb}")
            except JobError as exc:
                modeladmin.message_user(request, str(exc), level=messages.WARNING)

    run.short_description = f"{verb.capitalize()} the selected jobs"
    run.allowed_permissions = ("run",)
    run.__name__ = f"job_{verb}"
    return run


@admin.register(Job)
class JobAdmin(ReaderScopedAdmin):
    form = JobForm
    group_paths = ("group",)  # a reader limited to server groups sees and saves the jobs of those groups
    role_object = "job"
    list_display = ("name", "state", "enabled", "scope", "max_depth", "max_pages", "progress_line", "group")
    list_filter = ("state", "enabled", "scope")
    search_fields = ("name",)
    readonly_fields = ("state", "admitted", "next_run_at", "progress_detail")
    inlines = [JobRunInline]
    actions = [_each(job_start, "started"), _each(job_pause, "paused"), _each(job_resume, "resumed"),
               _each(job_stop, "stopped")]  # fmt: skip

    @admin.display(description="progress")
    def progress_line(self, job: Job) -> str:
        p = job_progress(job=job)
        eta = "—" if p["eta_seconds"] is None else f"{p['eta_seconds']} s"
        return f"done {p['done']} · queued {p['queued']} · failed {p['failed']} · ETA {eta}"

    @admin.display(description="why it is not moving")
    def progress_detail(self, job: Job) -> str:
        if job.pk is None:
            return "—"
        stalled = job_stalled(job=job)
        if not stalled:
            return self.progress_line(job)
        rows = format_html_join(
            "", "<li>{}: {}{}</li>", ((s["server"], s["reason"], f" until {s['until']}" if s["until"] else "")
                                      for s in stalled)  # fmt: skip
        )
        return format_html("{}<ul>{}</ul>", self.progress_line(job), rows)

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(request, obj, change, **kwargs)
        form.actor = request.user
        return form

    def save_model(self, request: HttpRequest, obj: Job, form, change: bool) -> None:
        """Through job_save, as the API and `apply` write a job: a running job's edited rules set its queued
        URLs that no longer pass aside, and its politeness applies from its next request on."""
        data = form.cleaned_data if form is not None else job_definition(obj)
        spec = {k: data[k] for k in JOB_KEYS if k in data}
        changed = form.changed_data if form is not None else []
        # The role rules as the API and `apply` hold them (crawlcore.roles): the job's group, its seeds.
        roles.check(request.user, "update" if change else "create", "job", group=spec.get("group", ""))
        if change:
            roles.check(request.user, "update", "job", group=Job.objects.get(pk=obj.pk).group)
        reason = roles.seeds_refusal(request.user, spec.get("seeds") or [])
        if reason is not None:
            raise PermissionDenied(reason)
        if change and "name" in changed:  # renamed here: the row (and its runs) keeps its id
            Job.objects.filter(pk=obj.pk).update(name=spec["name"])
        _, job = job_save(spec=spec)
        obj.pk = job.pk
        obj.refresh_from_db()
        if change and {"include", "exclude", "max_depth", "scope"} & set(changed):
            self.message_user(request, "the job's queued URLs that no longer pass its rules are set aside")


@admin.register(JobRun)
class JobRunAdmin(ReaderScopedAdmin):
    group_paths = ("job__group",)
    role_object = "job"
    list_display = ("job", "started_at", "ended_at", "trigger", "pages", "failures", "stop_reason")
    list_filter = ("trigger", ("stop_reason", NamedValuesFilter))
    readonly_fields = ("job", "started_at", "ended_at", "trigger", "done_at_start", "failed_at_start", "pages",
                       "failures", "stop_reason")  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
