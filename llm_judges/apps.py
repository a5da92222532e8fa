from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class LlmJudgesConfig(AppConfig):
    name = "llm_judges"
    verbose_name = "Judges"

    def ready(self) -> None:
        from llm_judges.prompts import prompt_registry

        # Every task-type package's ``judging`` module registers its prompts when imported.
        autodiscover_modules("judging", register_to=prompt_registry)
