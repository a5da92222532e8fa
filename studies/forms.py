from django import forms


class ImportForm(forms.Form):
    file = forms.FileField()
    format = forms.ChoiceField(choices=[], initial="detect")
    update = forms.BooleanField(required=False, help_text="Replace items whose external id exists.")
    mapping = forms.FileField(required=False, help_text="Mapping file for formats that need one.")

    def __init__(self, *args, formats: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        # "detect": judged from the file's beginning (studies.services.format_detection)
        self.fields["format"].choices = [("detect", "detect the format")] + [
            (f, f) for f in formats
        ]


class AnnotationImportForm(forms.Form):
    """Annotations collected elsewhere (``studies.services.external_annotations``)."""

    prefix = "annotations"
    file = forms.FileField()
    format = forms.ChoiceField(choices=[])
    source = forms.CharField(
        max_length=200,
        required=False,
        help_text="Where they come from (the original study, an MTurk batch); the file's name "
        "when empty.",
    )
    skip_unknown_items = forms.BooleanField(
        required=False,
        label="Leave out rows naming items this project does not have",
    )
    mapping = forms.FileField(required=False, help_text="Mapping file for formats that need one.")

    def __init__(self, *args, formats: list[str], **kwargs):
        super().__init__(*args, **kwargs)
        self.fields["format"].choices = [(f, f) for f in formats]


class LabelStudioImportForm(forms.Form):
    """A Label Studio project in one step: its JSON export and its labeling config
    (``studies.services.label_studio``)."""

    prefix = "label_studio"
    file = forms.FileField(label="Label Studio JSON export")
    labeling_config = forms.FileField(label="Labeling config (XML)")
    source = forms.CharField(
        max_length=200,
        required=False,
        help_text="Where it comes from; the export's file name when empty.",
    )
