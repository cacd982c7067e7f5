"""Issue 16: MCP env/header values encrypted at rest (M10); provider key variables allow-listed (M8)."""

from django.db import migrations, models

import chatapp.models.fields
import chatapp.models.provider


def encrypt_stored_values(apps, schema_editor):
    # Loading reads plain (legacy) and encrypted values alike; saving writes every literal encrypted.
    for server in apps.get_model("chatapp", "McpServer").objects.all():
        server.save(update_fields=["env", "headers"])


class Migration(migrations.Migration):
    dependencies = [
        ("chatapp", "0005_provider_knobs"),
    ]

    operations = [
        migrations.AlterField(
            model_name="mcpserver",
            name="env",
            field=chatapp.models.fields.EncryptedValuesJSONField(blank=True, default=dict),
        ),
        migrations.AlterField(
            model_name="mcpserver",
            name="headers",
            field=chatapp.models.fields.EncryptedValuesJSONField(blank=True, default=dict),
        ),
        migrations.AlterField(
            model_name="providerconfig",
            name="api_key_env",
            field=models.CharField(
                blank=True,
                help_text="name of an environment variable matching CLEARLOOP_PROVIDER_KEY_ENV_PATTERN "
                "(default CLEARLOOP_KEY_* or *_API_KEY)",
                max_length=80,
                validators=[chatapp.models.provider.validate_key_env],
            ),
        ),
        migrations.RunPython(encrypt_stored_values, migrations.RunPython.noop),
    ]
