"""The curation pages' forms: list filters (GET) and the actions (POST, each with CSRF)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.core.validators import MaxLengthValidator

from apps.curation.pages import STATUSES, DocumentFilters, RelationFilters
from apps.curation.services import MAX_NAME, MAX_PREDICATE
from apps.vectors.spaces import AUTO, SPACE_CHOICES

ID_LENGTH = 64  # entity and document ids are 32 hex digits; room for others


def errors_text(form: forms.Form) -> str:
    """A form's errors as one line, for a message."""
    return "; ".join(
        f"{form.fields[name].label or name}: {' '.join(str(e) for e in errors)}" for name, errors in form.errors.items()
    )


class EntitySearchForm(forms.Form):
    q = forms.CharField(required=False, max_length=MAX_NAME, label="Name or alias contains")
    type = forms.ChoiceField(required=False, label="Type", choices=[("", "any")])

    def __init__(self, *args: Any, types: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        type_field = self.fields["type"]
        assert isinstance(type_field, forms.ChoiceField)
        type_field.choices = [("", "any"), *((t, t) for t in types)]

    def values(self) -> tuple[str, str]:
        """(query, type) of the valid fields (an unknown type is reported and ignored)."""
        self.is_valid()
        return (self.cleaned_data.get("q") or "").strip(), self.cleaned_data.get("type") or ""


class RenameForm(forms.Form):
    name = forms.CharField(max_length=MAX_NAME, label="New name")


class AliasForm(forms.Form):
    alias = forms.CharField(max_length=MAX_NAME, label="Alias")


class MergeForm(forms.Form):
    """Merge ``drop`` into ``keep``; one of them is the entity whose page posts it."""

    keep = forms.CharField(max_length=ID_LENGTH)
    drop = forms.CharField(max_length=ID_LENGTH)


class PairMergeForm(forms.Form):
    """A suggested pair; the service keeps the one with more mentions."""

    first = forms.CharField(max_length=ID_LENGTH)
    second = forms.CharField(max_length=ID_LENGTH)


class SynonymReviewForm(forms.Form):
    """A synonym edge between two entities, confirmed or rejected."""

    source = forms.CharField(max_length=ID_LENGTH)
    target = forms.CharField(max_length=ID_LENGTH)
    decision = forms.ChoiceField(choices=[("confirm", "confirm"), ("reject", "reject")])


class SplitForm(forms.Form):
    name = forms.CharField(max_length=MAX_NAME, label="Name of the new entity")
    documents = forms.MultipleChoiceField(
        label="Documents whose mentions move to the new entity", widget=forms.CheckboxSelectMultiple
    )

    def __init__(self, *args: Any, documents: Sequence[dict[str, Any]] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["documents"]
        assert isinstance(field, forms.MultipleChoiceField)
        field.choices = [
            (d["id"], f"{d['collection']}/{d['path']} ({d['mentions']} mention{'s' if d['mentions'] != 1 else ''})")
            for d in documents
        ]


class RelationFilterForm(forms.Form):
    status = forms.ChoiceField(required=False, label="Status", choices=[("", "any"), *((s, s) for s in STATUSES)])
    predicate = forms.CharField(
        required=False,
        max_length=MAX_PREDICATE,
        label="Predicate",
        widget=forms.TextInput(attrs={"list": "predicates"}),  # the page's datalist of known predicates
    )
    entity = forms.CharField(required=False, max_length=MAX_NAME, label="Entity (name or id)")

    def filters(self) -> RelationFilters:
        """The filters of the valid fields (an unknown status is reported and ignored)."""
        self.is_valid()
        data = self.cleaned_data
        return RelationFilters(
            status=data.get("status") or "",
            predicate=(data.get("predicate") or "").strip(),
            entity=(data.get("entity") or "").strip(),
        )


class RelationForm(forms.Form):
    """Names one relation: its source, predicate and target."""

    source = forms.CharField(max_length=ID_LENGTH)
    predicate = forms.CharField(max_length=200, strip=False)
    target = forms.CharField(max_length=ID_LENGTH)


class PredicateForm(RelationForm):
    new_predicate = forms.CharField(max_length=MAX_PREDICATE, label="New predicate")


class DocumentFilterForm(forms.Form):
    collection = forms.ChoiceField(required=False, label="Collection", choices=[("", "any")])
    text = forms.CharField(required=False, max_length=500, label="Title or path contains")

    def __init__(self, *args: Any, collections: Sequence[str] = (), **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["collection"]
        assert isinstance(field, forms.ChoiceField)
        field.choices = [("", "any"), *((c, c) for c in collections)]

    def filters(self) -> DocumentFilters:
        self.is_valid()
        data = self.cleaned_data
        return DocumentFilters(collection=data.get("collection") or "", text=(data.get("text") or "").strip())


class MultipleFileInput(forms.ClearableFileInput):
    allow_multiple_selected = True


class MultipleFileField(forms.FileField):
    """Several files under one name (``files``); the upload service checks them all."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("widget", MultipleFileInput())
        kwargs.setdefault("error_messages", {"required": "Choose at least one file."})
        super().__init__(*args, **kwargs)

    def clean(self, data: Any, initial: Any = None) -> Any:
        if isinstance(data, list | tuple):
            return [super(MultipleFileField, self).clean(item, initial) for item in data]
        return [super().clean(data, initial)]


class UploadForm(forms.Form):
    """Files into a collection: one the uploader can read (picked from a list), or a new one (named;
    the uploader owns it). ``collection`` is the collection's name whichever way it came, so a client
    that posts a name (the API, a script) needs nothing else; whether it may be used is decided by
    ``apps.ingest.uploads.upload_collection``."""

    NEW = ""  # the picker's "a new collection" choice

    # The field is named like the API's (``files``); Django keeps it apart from ``Form.files``.
    files = MultipleFileField(  # type: ignore[assignment]
        label="Files (text, Markdown, HTML, PDF, images, CSV/TSV/XLSX, zip)"
    )
    collection = forms.CharField(  # a picker: the length is checked, not put on the <select>
        required=False, label="Collection", widget=forms.Select, validators=[MaxLengthValidator(100)]
    )
    new_collection = forms.CharField(
        max_length=100, required=False, label="New collection name", help_text="used when the collection is “new”"
    )
    new_collection_space = forms.ChoiceField(
        choices=SPACE_CHOICES, required=False, initial=AUTO, label="New collection's text space"
    )

    def __init__(self, *args: Any, collections: list[str] | None = None, **kwargs: Any) -> None:
        kwargs.setdefault("auto_id", "upload_%s")  # the documents filter has a "collection" too
        super().__init__(*args, **kwargs)
        readable = list(collections or [])
        posted = str(self.data.get("collection") or "").strip() if self.is_bound else ""
        if posted and posted not in readable:  # a name the client sent: shown back as sent, not lost
            readable.append(posted)
        choices = [(self.NEW, "a new collection…"), *((name, name) for name in readable)]
        self.fields["collection"].widget.choices = choices

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        name = " ".join(str(data.get("new_collection") or "").split()) or str(data.get("collection") or "").strip()
        if not name and not self.errors:
            self.add_error("new_collection", "Pick a collection, or name a new one.")
        data["collection"] = name
        data["new_collection_space"] = data.get("new_collection_space") or AUTO
        return data


class NumbersField(forms.Field):
    """Several whole numbers under one name (``files=0&files=2``)."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[int]:
        if not value:
            return []
        try:
            return [int(item) for item in value]
        except (TypeError, ValueError) as exc:
            raise forms.ValidationError("Choose files by their number.") from exc


class RetryForm(forms.Form):
    """The positions of a failed job's files to retry; none chosen: every kept file."""

    files = NumbersField(required=False, label="Files")  # type: ignore[assignment]  # as in UploadForm
