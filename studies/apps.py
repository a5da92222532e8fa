from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class StudiesConfig(AppConfig):
    name = "studies"
    verbose_name = "Studies"

    def ready(self) -> None:
        from studies import checks  # noqa: F401  (registers the registries' cross-checks)
        from studies.demos import demo_registry
        from studies.replays import replay_registry

        # Every task-type package's ``demo`` module registers its demo projects…
        autodiscover_modules("demo", register_to=demo_registry)
        # … and its ``replay`` module (optional) the replay of its source study.
        autodiscover_modules("replay", register_to=replay_registry)
