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


class PreselectionForm(forms.Form):
    judge = forms.ModelChoiceField(
        queryset=None, required=False, empty_label="Off (recommended: suggestions anchor people)"
    )

    def __init__(self, *args, judges, **kwargs):
        super().__init__(*args, **kwargs)
        from llm_judges.models import Judge

        self.fields["judge"].queryset = Judge.objects.filter(pk__in=[j.pk for j in judges])
