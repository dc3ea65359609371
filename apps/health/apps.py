from django.apps import AppConfig


class HealthConfig(AppConfig):
    name = "apps.health"
    label = "health"
    verbose_name = "Service health"
