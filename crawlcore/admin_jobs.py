"""The admin's pages for crawl jobs and their runs: the job's keys checked as `manage.py apply` and the API
check them (crawler.jobrules), its progress, ETA and stalls shown (crawlcore.selectors_jobs), and the
actions start, pause, resume, stop."""

from __future__ import annotations

from django import forms
from django.contrib import admin, messages
from django.http import HttpRequest
from django.utils.html import format_html, format_html_join

from crawler.jobrules import JOB_KEYS, job_spec_check

from .admin_base import ReaderScopedAdmin
from .models import Job, JobRun
from .selectors_jobs import job_progress, job_stalled
from .services.jobs import JobError, job_pause, job_resume, job_rules_reapply, job_start, job_stop


class JobForm(forms.ModelForm):
    class Meta:
        model = Job
        fields = [k for k in JOB_KEYS]

    def clean(self):
        data = super().clean()
        spec, problems = job_spec_check({k: data.get(k) for k in JOB_KEYS if k in data or k in ("name", "seeds")})
        for key, message in problems.items():
            self.add_error(key if key in self.fields else None, message)
        data.update(spec)
        return data


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

    def save_model(self, request: HttpRequest, obj: Job, form, change: bool) -> None:
        super().save_model(request, obj, form, change)
        if change and {"include", "exclude", "max_depth", "scope"} & set(form.changed_data):
            n = job_rules_reapply(job=obj)
            if n:
                self.message_user(request, f"{n} queued URLs no longer pass the job's rules: set aside")


@admin.register(JobRun)
class JobRunAdmin(ReaderScopedAdmin):
    group_paths = ("job__group",)
    role_object = "job"
    list_display = ("job", "started_at", "ended_at", "trigger", "pages", "failures", "stop_reason")
    list_filter = ("trigger", "stop_reason")
    readonly_fields = ("job", "started_at", "ended_at", "trigger", "done_at_start", "failed_at_start", "pages",
                       "failures", "stop_reason")  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False
