from django.apps import AppConfig


class ModelsConfig(AppConfig):
    name = "apps.models"
    label = "models"
    verbose_name = "Model registry"
