from django.apps import AppConfig


class ExplorerConfig(AppConfig):
    name = "apps.explorer"
    label = "explorer"
    verbose_name = "Graph explorer"
