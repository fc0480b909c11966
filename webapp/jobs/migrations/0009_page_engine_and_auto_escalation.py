from django.db import migrations, models
from django.db.models import OuterRef, Subquery


def pages_take_their_jobs_engine(apps, schema_editor):
    Job = apps.get_model("jobs", "Job")
    Page = apps.get_model("jobs", "Page")
    Page.objects.update(
        engine=Subquery(Job.objects.filter(pk=OuterRef("job_id")).values("engine")[:1])
    )


class Migration(migrations.Migration):
    dependencies = [
        ("jobs", "0008_page_decode_plain"),
    ]

    operations = [
        migrations.AddField(
            model_name="page",
            name="engine",
            field=models.CharField(blank=True, max_length=50),
        ),
        migrations.AddField(
            model_name="page",
            name="escalation",
            field=models.JSONField(blank=True, default=dict),
        ),
        migrations.AddField(
            model_name="job",
            name="pages_escalated",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="job",
            name="vlm_seconds",
            field=models.FloatField(default=0.0),
        ),
        migrations.AddField(
            model_name="job",
            name="pages_left_local",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.RunPython(pages_take_their_jobs_engine, migrations.RunPython.noop),
    ]
