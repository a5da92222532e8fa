from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        # Django admin's autodiscovery: every installed app's ``task`` module (a task-type
        # package's task.py) registers its task type when imported.
        autodiscover_modules("task")
