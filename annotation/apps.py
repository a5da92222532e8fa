from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self) -> None:
        from annotation.task_types import task_type_registry

        # Django admin's autodiscovery: every installed app's ``task`` module (a task-type
        # package's task.py) registers its task type when imported; a module that fails leaves
        # the registry as it was before it.
        autodiscover_modules("task", register_to=task_type_registry)

        from annotation.quality import open_work_release
        from projects.hooks import register_annotator_left

        # A removed or re-roled annotator's reservations are dealt to others at once.
        register_annotator_left(open_work_release)
