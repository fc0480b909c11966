"""Forms of the browser interface; the services do the real validation and say why."""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings

from webapp.jobs.models import Job
from webapp.webhooks.models import Event

STATUS_FILTERS = [
    ("", "Any status"),
    ("active", "Queued or running"),
    *[(value, label.replace("_", " ").capitalize()) for value, label in Job.Status.choices],
]


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    def clean(self, data, initial=None):
        files = data if isinstance(data, list | tuple) else [data]
        files = [file for file in files if file]
        if not files:
            raise forms.ValidationError("Choose at least one file to read.", code="required")
        return [super(MultipleFileField, self).clean(file, initial) for file in files]


# What the file chooser offers; the server decides by the bytes, whatever the name.
DOCUMENT_ACCEPT = (
    ".pdf,.png,.jpg,.jpeg,.tif,.tiff,.webp,.docx,.docm,.pptx,.pptm,.xlsx,.xlsm,.odt,.ods,.odp,"
    ".csv,.html,.htm,.md,.txt,.epub,.xps,.oxps,.fb2,.mobi,.cbz,.svg"
)


class UploadForm(forms.Form):
    # The metaclass moves declared fields into base_fields, so this does not shadow Form.files
    # (the uploaded files) at run time; the name is the one the page and its tests post.
    files = MultipleFileField(  # type: ignore[assignment]
        label="Documents",
        widget=MultipleFileInput(attrs={"accept": DOCUMENT_ACCEPT, "multiple": True}),
        help_text=(
            "PDF, images (PNG, JPEG, TIFF, WebP), Word, PowerPoint, Excel, OpenDocument, "
            "web pages, Markdown, text, CSV and e-books; one job per file."
        ),
    )
    pages = forms.CharField(
        label="Pages",
        required=False,
        max_length=200,
        help_text="All pages if empty; or numbers and ranges like 1-3,7 or 5-.",
        widget=forms.TextInput(attrs={"placeholder": "all", "autocomplete": "off"}),
    )
    engine = forms.ChoiceField(label="Engine")
    table_format = forms.ChoiceField(
        label="Tables as",
        choices=[
            ("auto", "Markdown, HTML where cells merge"),
            ("markdown", "Markdown tables"),
            ("html", "HTML tables"),
        ],
    )
    # Documents read from their structure (the jobs API's options of the same names).
    speaker_notes = forms.BooleanField(
        label="Speaker notes",
        required=False,
        help_text="After each slide (PowerPoint, OpenDocument presentations).",
    )
    comments = forms.BooleanField(
        label="Reviewers' comments",
        required=False,
        help_text="After what they belong with (Word, PowerPoint, Excel, OpenDocument).",
    )
    webhook_url = forms.URLField(
        label="Webhook URL (optional)",
        required=False,
        max_length=2000,
        assume_scheme="https",
        help_text="Receives a signed event when each job ends.",
        widget=forms.URLInput(attrs={"placeholder": "https://example.org/hooks/folio"}),
    )

    def __init__(self, *args, engines: list[str], default_engine: str, **kwargs):
        super().__init__(*args, **kwargs)
        engine_field = self.fields["engine"]
        assert isinstance(engine_field, forms.ChoiceField)
        engine_field.choices = [(name, name) for name in engines]
        self.fields["engine"].initial = default_engine
        # The server's default (FOLIO_TABLE_FORMAT), what the API gives a request without one.
        self.fields["table_format"].initial = settings.FOLIO_TABLE_FORMAT


class JobFilterForm(forms.Form):
    status = forms.ChoiceField(choices=STATUS_FILTERS, required=False)
    q = forms.CharField(label="File name", required=False, max_length=200)
    created_after = forms.DateField(
        label="From", required=False, widget=forms.DateInput(attrs={"type": "date"})
    )
    created_before = forms.DateField(
        label="Until", required=False, widget=forms.DateInput(attrs={"type": "date"})
    )

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        after, before = data.get("created_after"), data.get("created_before")
        if after and before and after > before:
            raise forms.ValidationError("The “From” date must not be after the “Until” date.")
        return data


class ApiKeyForm(forms.Form):
    name = forms.CharField(
        label="Name",
        max_length=100,
        required=False,
        help_text="So you can tell your keys apart, e.g. “laptop” or “nightly import”.",
    )


class EndpointForm(forms.Form):
    url = forms.URLField(label="URL", max_length=2000, assume_scheme="https")
    events = forms.MultipleChoiceField(
        label="Events",
        choices=Event.choices,
        initial=[str(event) for event in Event if event != Event.PAGE_COMPLETED],
        widget=forms.CheckboxSelectMultiple,
    )
    description = forms.CharField(label="Description", max_length=200, required=False)
