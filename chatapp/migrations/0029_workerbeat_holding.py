from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("chatapp", "0028_conversation_owner_recent_index"),
    ]

    operations = [
        migrations.AddField(
            model_name="workerbeat",
            name="holding",
            field=models.JSONField(blank=True, default=list, null=True),
        ),
    ]
