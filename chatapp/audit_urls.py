"""The auditor's pages, mounted at ``/audit/`` (all GET, exports included)."""

from django.urls import path

from chatapp.views import audit

app_name = "audit"

urlpatterns = [
    path("", audit.runs, name="runs"),
    path("runs/<int:run_id>/", audit.run_detail, name="run"),
    path("runs/<int:run_id>/rounds/<int:index>/", audit.round_raw, name="round_raw"),
    path("runs/<int:run_id>/otel.json", audit.export_otel, name="export_otel"),
    path("export.jsonl", audit.export_jsonl, name="export_jsonl"),
    path("log/", audit.audit_log, name="log"),
]
