from django.apps import AppConfig


class CrowdConfig(AppConfig):
    name = "crowd"
    verbose_name = "Crowd platforms and quality control"

    def ready(self) -> None:
        from annotation.hooks import register_assignment_scope
        from crowd.selectors import in_current_session

        # A crowd login reaches only its current platform session's work (annotation.hooks).
        register_assignment_scope(in_current_session)
