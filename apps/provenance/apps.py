from django.apps import AppConfig


class ProvenanceConfig(AppConfig):
    name = "apps.provenance"
    label = "provenance"
    verbose_name = "Provenance"
