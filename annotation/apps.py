from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        # The registry is filled here, like Django admin's autodiscovery: every task type module
        # registers itself when imported.
        from annotation.task_types import load_builtin_task_types

        load_builtin_task_types()
