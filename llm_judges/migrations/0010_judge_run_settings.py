"""Runs record their judge's answer settings and a fingerprint of them (issue 27): embedding and
NLI judges use no prompt, so these are what their export rows carry. Runs from before are filled
in from their judge, whose kind, model and parameters are frozen once it has runs."""

import hashlib
import json

from django.db import migrations, models

# llm_judges.parameters.ANSWER_SETTINGS as of this migration.
ANSWER_SETTINGS = {
    "embedding": ("threshold",),
    "nli": (
        "entailment_label",
        "model_type",
        "direction",
        "label_mapping",
        "input_template",
        "max_new_tokens",
        "max_length",
    ),
    "llm": ("temperature", "top_p", "max_tokens", "seed", "structured_output"),
}


def fill_settings(apps, schema_editor):
    JudgeRun = apps.get_model("llm_judges", "JudgeRun")
    runs = JudgeRun.objects.select_related("judge").filter(settings_fingerprint="")
    changed = []
    for run in runs.iterator(chunk_size=500):
        judge, parameters = run.judge, run.judge.parameters or {}
        settings = {
            "kind": judge.kind,
            "model": judge.model,
            **{k: parameters[k] for k in ANSWER_SETTINGS.get(judge.kind, ()) if k in parameters},
        }
        text = json.dumps(settings, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        run.judge_settings = settings
        run.settings_fingerprint = hashlib.sha256(text.encode("utf-8")).hexdigest()
        changed.append(run)
        if len(changed) >= 500:
            JudgeRun.objects.bulk_update(changed, ["judge_settings", "settings_fingerprint"])
            changed = []
    JudgeRun.objects.bulk_update(changed, ["judge_settings", "settings_fingerprint"])


class Migration(migrations.Migration):
    dependencies = [
        ("llm_judges", "0009_judge_run_faults_error_classes_producing_run"),
    ]

    operations = [
        migrations.AddField(
            model_name="judgerun",
            name="judge_settings",
            field=models.JSONField(
                blank=True,
                default=dict,
                help_text="What decided the run's answers besides a prompt: the judge's kind, model and answer settings (embedding: threshold; NLI: entailment label, model type, direction, label mapping, input template…; LLM: sampling settings). Embedding and NLI judges use no prompt: this is their provenance.",
            ),
        ),
        migrations.AddField(
            model_name="judgerun",
            name="settings_fingerprint",
            field=models.CharField(
                blank=True, help_text="sha256 of judge_settings (canonical JSON).", max_length=64
            ),
        ),
        migrations.RunPython(fill_settings, migrations.RunPython.noop),
    ]
