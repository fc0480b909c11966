from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0007_page_review_score"),
    ]

    operations = [
        migrations.AddField(
            model_name="page",
            name="decode_plain",
            field=models.BooleanField(default=False),
        ),
    ]
