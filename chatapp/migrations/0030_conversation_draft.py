from django.db import migrations, models
from django.db.models import Exists, OuterRef


def mark_drafts(apps, schema_editor):
    """Before this field the home page handed out any empty conversation as the draft: the empty ones
    (no message, no file) stay what they were, drafts, so nobody's draft changes on upgrade."""
    Conversation = apps.get_model("chatapp", "Conversation")
    Message = apps.get_model("chatapp", "Message")
    Upload = apps.get_model("chatapp", "Upload")
    Conversation.objects.exclude(Exists(Message.objects.filter(conversation=OuterRef("pk")))).exclude(
        Exists(Upload.objects.filter(conversation=OuterRef("pk")))
    ).update(draft=True)


class Migration(migrations.Migration):
    dependencies = [
        ("chatapp", "0029_workerbeat_holding"),
    ]

    operations = [
        migrations.AddField(
            model_name="conversation",
            name="draft",
            field=models.BooleanField(default=False, verbose_name="draft"),
        ),
        migrations.RunPython(mark_drafts, migrations.RunPython.noop),
    ]
