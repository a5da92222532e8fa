from django import forms


class ImportForm(forms.Form):
    file = forms.FileField()
    format = forms.ChoiceField(choices=[])
    update = forms.BooleanField(required=False, help_text="Replace items whose external id exists.")
    mapping = forms.FileField(required=False, help_text="Mapping file for formats that need one.")

    def __init__(self, *args, formats: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["format"].choices = [(f, f) for f in formats]
