from django.apps import AppConfig
from django.utils.module_loading import autodiscover_modules


class AgreementConfig(AppConfig):
    name = "agreement"
    verbose_name = "Agreement"

    def ready(self) -> None:
        from agreement.reports.sections import report_registry

        # Every task-type package's ``report`` module registers its dashboard section.
        autodiscover_modules("report", register_to=report_registry)
