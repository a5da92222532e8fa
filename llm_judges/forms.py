import json

from django import forms

from annotation.models import Item


class StartRunForm(forms.Form):
    judge = forms.ModelChoiceField(queryset=None, empty_label=None)
    kind = forms.MultipleChoiceField(
        choices=Item.Kind.choices,
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: every kind.",
    )
    group = forms.ChoiceField(required=False)
    external_ids = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "Optional: item ids, one per line"}),
        label="Only these items",
    )
    budget_calls = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=2**31 - 1,
        label="Budget: calls",
        help_text="LLM: stop after this many calls (blank: no limit).",
    )
    budget_tokens = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=2**31 - 1,
        label="Budget: tokens",
        help_text="LLM: stop before input + output tokens pass this (blank: no limit).",
    )
    both_orders = forms.BooleanField(
        required=False,
        label="Also judge in reversed order (position bias)",
        help_text="Ranking: a second run with the outputs in reverse order.",
    )

    def __init__(self, *args, judges, groups, **kwargs):
        super().__init__(*args, **kwargs)
        from llm_judges.models import Judge

        self.fields["judge"].queryset = Judge.objects.filter(pk__in=[j.pk for j in judges])
        self.fields["group"].choices = [("", "All groups")] + [(g, g) for g in groups]

    def filters(self) -> dict:
        data = self.cleaned_data
        ids = [
            line.strip() for line in (data.get("external_ids") or "").splitlines() if line.strip()
        ]
        return {
            "kind": data.get("kind") or [],
            "group": data.get("group") or "",
            "external_ids": ids,
        }


class PreviewForm(forms.Form):
    judge = forms.ModelChoiceField(queryset=None, empty_label=None)
    item = forms.CharField(label="Item id", max_length=255)

    def __init__(self, *args, judges, **kwargs):
        super().__init__(*args, **kwargs)
        from llm_judges.models import Judge

        self.fields["judge"].queryset = Judge.objects.filter(
            pk__in=[j.pk for j in judges if j.kind == Judge.Kind.LLM]
        )


class PreselectionForm(forms.Form):
    judge = forms.ModelChoiceField(
        queryset=None, required=False, empty_label="Off (recommended: suggestions anchor people)"
    )

    def __init__(self, *args, judges, **kwargs):
        super().__init__(*args, **kwargs)
        from llm_judges.models import Judge

        self.fields["judge"].queryset = Judge.objects.filter(pk__in=[j.pk for j in judges])


class JudgeAddForm(forms.Form):
    """A new judge of the project: an LLM judge calls one of the endpoints staff opened to it."""

    name = forms.CharField(max_length=100)
    kind = forms.ChoiceField(choices=())
    model = forms.CharField(
        max_length=500,
        help_text="LLM: the model name the endpoint serves; NLI: a model directory on the "
        "workers; embedding: all-MiniLM-L6-v2.",
    )
    endpoint = forms.ModelChoiceField(
        queryset=None,
        required=False,
        empty_label="(none: NLI and embedding judges; an LLM judge then waits for one)",
    )
    parameters = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": '{"temperature": 0}'}),
        help_text="JSON, optional: the kind's settings (defaults filled in).",
    )
    description = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2}))

    def __init__(self, *args, endpoints, kinds, **kwargs):
        super().__init__(*args, **kwargs)
        from llm_judges.models import Judge, ModelEndpoint

        # only the kinds the project's task type can run
        self.fields["kind"].choices = [(k, label) for k, label in Judge.Kind.choices if k in kinds]
        self.fields["endpoint"].queryset = ModelEndpoint.objects.filter(
            pk__in=[e.pk for e in endpoints]
        )

    def clean_parameters(self) -> dict:
        text = (self.cleaned_data.get("parameters") or "").strip()
        if not text:
            return {}
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise forms.ValidationError(f"Not valid JSON: {exc.msg}.") from None
        if not isinstance(value, dict):
            raise forms.ValidationError('A JSON object, e.g. {"temperature": 0}.')
        return value


class JudgeCopyForm(forms.Form):
    """Copy a catalogue judge into this project (another project's judge is never offered)."""

    source = forms.ModelChoiceField(queryset=None, empty_label=None, label="Judge to copy")
    name = forms.CharField(max_length=100, required=False, help_text="Blank: the same name.")
    endpoint = forms.ModelChoiceField(
        queryset=None,
        required=False,
        empty_label="(keep its own if open to this project)",
        help_text="LLM judges: the endpoint the copy calls.",
    )

    def __init__(self, *args, sources, endpoints, **kwargs):
        super().__init__(*args, **kwargs)
        from llm_judges.models import Judge, ModelEndpoint

        self.fields["source"].queryset = Judge.objects.filter(pk__in=[j.pk for j in sources])
        self.fields["source"].label_from_instance = lambda judge: (
            f"{judge.project.name}: {judge.name}" if judge.project else f"catalogue: {judge.name}"
        )
        self.fields["endpoint"].queryset = ModelEndpoint.objects.filter(
            pk__in=[e.pk for e in endpoints]
        )


class JudgeEndpointForm(forms.Form):
    """Choose the endpoint of an LLM judge that has not run (a copied or bundled judge)."""

    judge = forms.ModelChoiceField(queryset=None, empty_label=None)
    endpoint = forms.ModelChoiceField(queryset=None, empty_label=None)

    def __init__(self, *args, judges, endpoints, **kwargs):
        super().__init__(*args, **kwargs)
        from llm_judges.models import Judge, ModelEndpoint

        self.fields["judge"].queryset = Judge.objects.filter(
            pk__in=[j.pk for j in judges if j.kind == Judge.Kind.LLM], runs__isnull=True
        )
        self.fields["endpoint"].queryset = ModelEndpoint.objects.filter(
            pk__in=[e.pk for e in endpoints]
        )
