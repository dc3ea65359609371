from django.apps import AppConfig


class CurationConfig(AppConfig):
    name = "apps.curation"
    label = "curation"
    verbose_name = "Knowledge curation"
