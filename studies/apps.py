from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class StudiesConfig(AppConfig):
    name = "studies"
    verbose_name = "Studies"

    def ready(self) -> None:
        from studies import checks  # noqa: F401  (registers the task-type completeness check)

        # Every task-type package's ``demo`` module registers its demo projects.
        autodiscover_modules("demo")
        # … and its ``replay`` module registers the replay of its source study.
        autodiscover_modules("replay")
