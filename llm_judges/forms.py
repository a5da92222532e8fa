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
