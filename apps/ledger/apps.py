from django.apps import AppConfig


class LedgerConfig(AppConfig):
    name = "apps.ledger"
    label = "ledger"
    verbose_name = "Knowledge change log"

    def ready(self) -> None:
        from django.db.backends.signals import connection_created

        from apps.ledger.maintenance import connection_prepare

        connection_created.connect(connection_prepare, dispatch_uid="ledger-maintenance")
