"""Runs get their own final state ``denied`` (issue 12 item 2: a denied call never ends "Succeeded").

Runs that finished before this change with a call that was refused (not one closed because the run
ended) are relabelled ``denied``, so every page reads the same state for old and new runs. The audit
chain's ``run_finished`` records keep what was recorded then; a run's status is not a pinned content
field (chatapp/audit/content.py).
"""

from django.db import migrations, models


def relabel_denied(apps, schema_editor):
    Run = apps.get_model("chatapp", "Run")
    ToolCall = apps.get_model("chatapp", "ToolCall")
    refused = ToolCall.objects.filter(status="denied").exclude(error_code="run_ended").values("run_id")
    Run.objects.filter(status="succeeded", pk__in=refused).update(status="denied")


def unlabel_denied(apps, schema_editor):
    apps.get_model("chatapp", "Run").objects.filter(status="denied").update(status="succeeded")


class Migration(migrations.Migration):
    dependencies = [
        ("chatapp", "0019_run_awaiting_sign_in"),
    ]

    operations = [
        migrations.AlterField(
            model_name="run",
            name="status",
            field=models.CharField(
                choices=[
                    ("queued", "Queued"),
                    ("running", "Running"),
                    ("awaiting_approval", "Awaiting Approval"),
                    ("awaiting_sign_in", "Awaiting Sign In"),
                    ("succeeded", "Succeeded"),
                    ("failed", "Failed"),
                    ("cancelled", "Cancelled"),
                    ("denied", "Denied"),
                ],
                db_index=True,
                default="queued",
                max_length=20,
            ),
        ),
        migrations.RunPython(relabel_denied, unlabel_denied),
    ]
