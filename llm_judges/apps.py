from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class LlmJudgesConfig(AppConfig):
    name = "llm_judges"
    verbose_name = "Judges"

    def ready(self) -> None:
        from annotation.hooks import register_counter_rebuild
        from llm_judges.counter_triggers import results_recount
        from llm_judges.prompts import prompt_registry

        # ``manage.py recount`` recomputes the judge result counter with the others.
        register_counter_rebuild(results_recount)

        # Every task-type package's ``judging`` module registers its prompts when imported.
        autodiscover_modules("judging", register_to=prompt_registry)
