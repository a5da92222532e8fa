from django.apps import AppConfig


class LlmJudgesConfig(AppConfig):
    name = "llm_judges"
    verbose_name = "Judges"

    def ready(self) -> None:
        # Every prompt module registers itself when imported (like the task-type registry).
        from llm_judges.prompts import load_prompts

        load_prompts()
