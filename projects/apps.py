from django.apps import AppConfig


class ProjectsConfig(AppConfig):
    name = "projects"
    verbose_name = "Projects"

    def ready(self) -> None:
        from projects import schema  # noqa: F401 - registers the token scheme for the API docs
