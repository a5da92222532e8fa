from django.apps import AppConfig


class LlmJudgesConfig(AppConfig):
    name = "llm_judges"
    verbose_name = "Judges"
